"""The probes behind labs C3.2, C3.3, C3.7, C3.8 on a tiny model."""

from __future__ import annotations

import pytest
from train_fixtures import TINY_MODEL

from expkit.train.probes import (
    compare_accumulated_gradients,
    measure_autocast_slowdown,
    measure_eval_memory,
    measure_item_sync,
    trace_grad_norm_growth,
)


def test_accumulated_micro_batches_match_one_big_batch():
    r = compare_accumulated_gradients(model_config=TINY_MODEL, k=4, micro_batch=2, seq_len=16)
    # float32 summation order only: ~1e-7 relative; 1e-5 leaves room for other BLAS kernels
    assert r.within and r.rel_diff < 1e-5 and r.grad_norm > 0


def test_accumulation_without_dividing_by_k_is_detected():
    r = compare_accumulated_gradients(model_config=TINY_MODEL, k=4, micro_batch=2, seq_len=16, divide_by_k=False)
    assert not r.within and r.rel_diff == pytest.approx(3.0, rel=1e-4)  # ||4g - g|| / ||g||


def test_grad_norm_grows_without_zero_grad_and_not_with_it():
    without = trace_grad_norm_growth(model_config=TINY_MODEL, steps=6, seq_len=16, zero_grad=False)
    with_ = trace_grad_norm_growth(model_config=TINY_MODEL, steps=6, seq_len=16, zero_grad=True)
    assert without[0] == with_[0]
    assert without[-1] > 2 * without[0]
    assert max(with_) < 1.5 * min(with_)


def test_eval_memory_grows_only_when_the_graph_is_kept():
    kw = dict(model_config=TINY_MODEL, steps=4, batch_size=2, seq_len=16)
    kept = measure_eval_memory(mode="grad_keep_loss", **kw).saved_bytes
    item = measure_eval_memory(mode="grad_item", **kw).saved_bytes
    nograd = measure_eval_memory(mode="no_grad", **kw).saved_bytes
    assert nograd == (0, 0, 0, 0)
    assert kept[0] > 0 and kept == tuple((i + 1) * kept[0] for i in range(4))  # linear growth, step for step
    assert len(set(item)) == 1 and item[0] == kept[0]  # freed each step: flat at one step's worth


def test_item_sync_and_autocast_timings_are_measured():
    t = measure_item_sync(model_config=TINY_MODEL, steps=6, sparse_every=3, batch_size=2, seq_len=16, repeats=1)
    assert t.every_step_s > 0 and t.sparse_step_s > 0 and t.ratio == pytest.approx(t.every_step_s / t.sparse_step_s)
    a = measure_autocast_slowdown(model_config=TINY_MODEL, batch_size=2, seq_len=16, repeats=1)
    assert a.fp32_s > 0 and a.bf16_s > 0 and a.slowdown == pytest.approx(a.bf16_s / a.fp32_s)

"""Measured roofs, decode measured and profile(step_fn) on this CPU: accounting checked, no speed thresholds
(the machine is shared; benchmarks/bench_perf.py reports the ratios)."""

from __future__ import annotations

import pytest

from expkit.errors import UsageError
from expkit.perf.decode import build_tiny_decoder, measure_decode_throughput
from expkit.perf.profiler import profile
from expkit.perf.roofs import (
    RoofQuery,
    measure_copy_bandwidth,
    measure_gemm,
    measure_numpy_copy_bandwidth,
    measure_roofs,
)

MIB = 1024**2


def test_gemm_flops_are_2n3_over_the_best_time():
    g = measure_gemm(n=128, repeats=3)
    assert g.best_flop_s * g.best_time_s == pytest.approx(2 * 128**3)
    assert g.best_flop_s >= g.median_flop_s > 0


def test_copy_counts_read_plus_write():
    c = measure_copy_bandwidth(size_bytes=8 * MIB, repeats=2)
    n = measure_numpy_copy_bandwidth(size_bytes=8 * MIB, repeats=2)
    assert c.size_bytes == n.size_bytes == 8 * MIB
    assert c.best_bandwidth_bytes_s >= c.median_bandwidth_bytes_s > 0 and n.best_bandwidth_bytes_s > 0


def test_roofs_with_reference_report_ratios_and_ridge():
    r = measure_roofs(
        RoofQuery(
            gemm_n=128, copy_bytes=4 * MIB, repeats=2, compare=True, reference_n=192, reference_copy_bytes=8 * MIB
        )
    )
    assert r.ridge_flop_per_byte == pytest.approx(r.peak_flop_s / r.bandwidth_bytes_s)
    assert r.gemm_vs_reference_ratio == pytest.approx(r.gemm.best_flop_s / r.reference_gemm.best_flop_s)
    assert r.bandwidth_vs_reference_ratio == pytest.approx(
        r.copy.best_bandwidth_bytes_s / r.reference_copy.best_bandwidth_bytes_s
    )
    assert r.reference_copy.method == "numpy copyto"


def test_bad_measurement_arguments():
    with pytest.raises(UsageError, match=r"n=8"):
        measure_gemm(n=8)
    with pytest.raises(UsageError, match=r"dtype 'int8'"):
        measure_gemm(n=32, dtype="int8")
    with pytest.raises(UsageError, match=r"device 'tpu'"):
        measure_copy_bandwidth(device="tpu")


def test_decode_points_follow_the_roofline_accounting():
    model = build_tiny_decoder(
        config={
            "hidden_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "intermediate_size": 128,
            "vocab_size": 256,
            "tie_word_embeddings": True,
        }
    )
    pts = measure_decode_throughput(batch_sizes=(1, 4), new_tokens=3, prompt_len=4, model=model)
    assert [p.batch for p in pts] == [1, 4]
    for p in pts:
        assert p.tokens_per_s == pytest.approx(p.batch / p.step_time_s)
        assert p.intensity_flop_per_byte == pytest.approx(p.flops_per_step / p.bytes_per_step)
        assert p.achieved_flop_s == pytest.approx(p.flops_per_step / p.step_time_s)
    # fp32 weights: 2 FLOP per 4-byte weight, so intensity grows with batch and stays below batch / 2
    assert pts[1].intensity_flop_per_byte > 2 * pts[0].intensity_flop_per_byte
    assert pts[0].intensity_flop_per_byte < 0.5


def test_profile_a_step_function_buckets_and_reports_overhead():
    import torch

    a = torch.randn(192, 192)
    q = torch.randn(1, 2, 64, 32)

    def step():
        torch.nn.functional.scaled_dot_product_attention(q, q, q)
        return (a @ a).to(torch.float64)

    rep = profile(step, steps=2)
    assert rep.steps == 2 and rep.timeline == "host"
    assert rep.shares["gemm"] > 0 and rep.shares["attention"] > 0 and rep.shares["copy_cast"] > 0
    assert sum(rep.shares.values()) == pytest.approx(1.0)
    assert rep.profiling_overhead_ratio is not None and rep.profiling_overhead_ratio > 0
    assert "aten::mm" in {o.name for o in rep.top_ops}

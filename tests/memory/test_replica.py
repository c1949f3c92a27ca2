"""The activation formula against saved-tensor measurements, and the ledger's peak against the allocator."""

from __future__ import annotations

import pytest

from expkit.memory.activation_fit import FitQuery, fit_activations
from expkit.memory.activations import ActivationQuery, estimate_activations
from expkit.memory.replica import ReplicaQuery, build_replica, measure_saved_bytes
from expkit.memory.validation import VALIDATION_CASES, validate_ledger
from expkit.models.description import describe_config

SPEC = describe_config(
    dict(
        model_type="qwen2",
        hidden_size=128,
        intermediate_size=384,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=1000,
        tie_word_embeddings=True,
    ),
    name="tiny-qwen2",
    source="test",
)


@pytest.mark.parametrize(
    "method, precision, ckpt, attention",
    [
        ("full", "fp32", False, "sdpa"),
        ("full", "bf16-mixed", False, "sdpa"),
        ("full", "fp32", False, "eager"),
        ("lora", "fp32", False, "sdpa"),
        ("lora", "bf16-mixed", False, "sdpa"),
        ("full", "fp32", True, "sdpa"),
    ],
)
def test_per_layer_formula_equals_measured_saved_bytes(method, precision, ckpt, attention):
    # exact: every term is a tensor autograd saves (unique storages, parameters and their autocast copies out)
    seq = 128
    measured = [
        measure_saved_bytes(
            build_replica(
                SPEC,
                ReplicaQuery(num_layers=n, method=method, precision=precision, grad_ckpt=ckpt, attention=attention),
            ),
            batch=1,
            seq=seq,
            precision=precision,
        ).activation_bytes
        for n in (1, 2)
    ]
    est = estimate_activations(
        SPEC.with_layers(1),
        ActivationQuery(batch=1, seq=seq, precision=precision, method=method, grad_ckpt=ckpt, attention=attention),
    )
    assert measured[1] - measured[0] == est.stored_bytes
    # the fixed part (ids, rotary tables, final norm, log-probs) within 0.5%: labels padding is not modelled
    assert 2 * measured[0] - measured[1] == pytest.approx(est.fixed_bytes + est.loss_bytes, rel=5e-3)


def test_autocast_weight_copies_are_reported_apart():
    sb = measure_saved_bytes(
        build_replica(SPEC, ReplicaQuery(num_layers=1, precision="bf16-mixed")), batch=1, seq=64, precision="bf16-mixed"
    )
    # 16-bit copies of q, k, v, o, gate, up, down of one layer and of the tied lm_head: 2 B each
    per_layer = 128 * 128 * 2 + 128 * 64 * 2 + 3 * 128 * 384
    assert sb.weight_copy_bytes == 2 * (per_layer + 1000 * 128)


def test_validation_cases_span_the_issue_grid():
    hidden = {c.hidden for c in VALIDATION_CASES}
    assert len(VALIDATION_CASES) >= 6 and min(hidden) >= 128 and max(hidden) <= 512
    assert {c.method for c in VALIDATION_CASES} == {"full", "lora"}
    assert {c.grad_ckpt for c in VALIDATION_CASES} == {"none", "full"}
    assert all(2 <= c.layers <= 8 and 128 <= c.seq <= 1024 for c in VALIDATION_CASES)


@pytest.mark.slow
def test_predicted_peak_within_10_percent_of_measured_on_every_case():
    table = validate_ledger()
    assert table.device in ("cpu", "cuda")
    bad = [(r.case, f"{r.rel_error:+.1%}") for r in table.rows if not r.within_tolerance]
    assert not bad, bad
    assert all(r.measured_peak_bytes > 10 * 2**20 for r in table.rows)  # a real step was measured


def test_fit_extrapolates_exactly_for_identical_layers(tmp_path):
    query = FitQuery(
        batch=2,
        seq=256,
        replica_seq=64,
        layers=(1, 2, 3),
        with_ckpt=True,
        time_repeats=1,
        cache_dir=tmp_path,
        replica_vocab=None,
    )
    fit = fit_activations(SPEC, query)
    assert fit.residual_bytes < 64  # identical layers: a straight line
    assert fit.extrapolated_bytes == pytest.approx(fit.formula_bytes, rel=5e-3)
    assert fit.ckpt_extrapolated_bytes < fit.extrapolated_bytes and fit.ckpt_time_ratio > 0
    again = fit_activations(SPEC, query)
    assert again.cached and again.extrapolated_bytes == fit.extrapolated_bytes


def test_predicted_peak_within_10_percent_two_quick_cases():
    # the backward-at-the-loss peak (activations) and the optimizer-step peak (state), one each
    table = validate_ledger([VALIDATION_CASES[0], VALIDATION_CASES[4]])
    assert table.rows[0].peak_phase.startswith("backward") and table.rows[1].peak_phase.startswith("optimizer step")
    assert table.all_within, [(r.case, r.rel_error) for r in table.rows]


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.skipif(not _cuda(), reason="needs CUDA: torch.cuda.max_memory_allocated path")
def test_predicted_peak_on_cuda():
    table = validate_ledger([VALIDATION_CASES[0], VALIDATION_CASES[2]], device="cuda")
    assert table.measurement == "torch.cuda.max_memory_allocated"
    assert table.all_within, [(r.case, r.rel_error) for r in table.rows]

"""AdamW's step temporaries by implementation (issue 22 item 2): the ledger's optimizer-step peak against the
step peak measured on a small replica with torch.optim.AdamW(foreach=True / False, fused=True) on this CPU, through
memory.validation.validate_optimizer_impls (the code lab C4.2v runs)."""

from __future__ import annotations

import dataclasses

import pytest

from expkit.memory.ledger import TrainingQuery, estimate_training_memory
from expkit.memory.validation import OPTIMIZER_CASE, OptimizerPeakTable, validate_optimizer_impls

IMPLS = ("foreach", "for-loop", "fused")


@pytest.fixture(scope="module")
def table() -> OptimizerPeakTable:
    return validate_optimizer_impls(OPTIMIZER_CASE, IMPLS, device="cpu")


@pytest.mark.parametrize("impl", IMPLS)
def test_step_peak_per_implementation_matches_measurement(table: OptimizerPeakTable, impl: str) -> None:
    row = next(r for r in table.rows if r.impl == impl)
    assert row.peak_phase.startswith("optimizer step")
    # allocator events on the CPU: the replica's peak within 0.1 % of the ledger's (the lab's band is 1 %)
    assert row.predicted_peak_bytes == pytest.approx(row.measured_peak_bytes, rel=1e-3)
    assert row.within_tolerance and row.nearest_impl == impl
    assert table.all_within and table.all_told_apart


def test_foreach_adds_its_sqrt_v_copy_of_every_parameter(table: OptimizerPeakTable) -> None:
    peak = {r.impl: r.measured_peak_bytes for r in table.rows}
    assert table.foreach_extra_bytes_per_param == pytest.approx(4.0, abs=0.1)  # torch._foreach_sqrt of every fp32 v
    largest = 8192 * 256  # the untied LM head: two fp32 temporaries of it, 2 * 4 B each
    assert peak["for-loop"] - peak["fused"] == pytest.approx(2 * 4 * largest, rel=0.01)
    assert table.params == pytest.approx(7.3e6, rel=0.01)


def test_a_wrong_implementation_is_told_apart(table: OptimizerPeakTable) -> None:
    """The check can fail: each measured peak is outside the band of the other implementations' predictions (a
    ledger that ignored optimizer_impl would miss two of the three)."""
    pred = {r.impl: r.predicted_peak_bytes for r in table.rows}
    for r in table.rows:
        for other in IMPLS:
            if other != r.impl:
                assert abs(pred[other] / r.measured_peak_bytes - 1) > table.tolerance


def test_unknown_implementation_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'adam-turbo'"):
        validate_optimizer_impls(impls=("adam-turbo",), device="cpu")


def test_default_implementation_is_torchs_for_the_device() -> None:
    query = TrainingQuery(model=OPTIMIZER_CASE.description(), batch=1, seq=32, precision="fp32", device="cpu")
    assert query.resolved_optimizer_impl == "for-loop"
    assert dataclasses.replace(query, device="cuda").resolved_optimizer_impl == "foreach"
    cuda = estimate_training_memory(dataclasses.replace(query, device="cuda"))
    assert "foreach AdamW" in cuda.line("temporaries").formula

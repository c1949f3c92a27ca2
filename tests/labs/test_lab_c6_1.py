"""Lab C6.1 runs in the quick budget and measures the ridge, decode intensity and decode across batch sizes."""

from __future__ import annotations

import pytest
from verdict_checks import assert_computed, assert_flips, assert_verdicts_follow

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_lab_c6_1_quick(tmp_path):
    (lab,) = select_labs(["C6.1"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    m = assert_verdicts_follow(res)
    assert m["ridge_h100"].value == pytest.approx(295, abs=1) and m["ridge_h100"].verdict.kind == "reproduced"
    assert_flips(m["ridge_h100"], 989.5 / 2.0)  # an H100 PCIe-like 2 TB/s would give another ridge
    assert m["decode_intensity_b1"].value == pytest.approx(1.0, abs=0.01)
    assert_flips(m["decode_intensity_b1"], 64.0)  # batch 64's intensity is not "~1"
    assert m["decode_intensity_b64"].value > 50
    assert_computed(m, "decode_intensity_b64")  # issue 36: the roofline model's arithmetic, like batch 1's
    assert m["cpu_peak"].value > 0 and m["cpu_bandwidth"].value > 0
    assert m["cpu_ridge"].value == pytest.approx(m["cpu_peak"].value / m["cpu_bandwidth"].value)
    assert m["decode_tps_b1"].value > 0 and m["decode_speedup_b64"].value > 0
    # the verdicts follow from the measurements
    b1_intensity = float(m["decode_tps_b1"].detail.split("intensity ")[1].split(" ")[0])
    assert m["decode_memory_bound"].value is (b1_intensity < m["cpu_ridge"].value)
    assert m["decode_speedup_b64"].verdict.kind == (
        "reproduced" if m["decode_speedup_b64"].value >= 1.2 else "not reproduced"
    )
    # issue 36: the contrary input is measured, not typed in. 'Larger batches are faster per token' fed batch 1
    # against batch 1 (sequences decoded one at a time share no weight reads: ~1x, fastest steps of each), or, when
    # this run's batch 64 fell short, batch 64 measured again
    from expkit.perf.decode import measure_decode_throughput

    fast = m["decode_speedup_b64"].verdict.kind == "reproduced"
    # the best of 5 interleaved rounds for each side: other work on the machine only slows a round down, and at a
    # load of 10 on 2 cores one round of batch 1 against batch 1 read 2.6x (issue 36: the suite passes under load)
    best = [0.0, 0.0]
    for _ in range(5):
        a, b = measure_decode_throughput(batch_sizes=(1, 1) if fast else (1, 64), new_tokens=8, threads=1)
        best = [max(best[0], a.tokens_per_s), max(best[1], b.tokens_per_s)]
    assert_flips(m["decode_speedup_b64"], best[1] / best[0])
    # issue 36: how much of the batch speed-up is per-step overhead, measured on the same decoder without weights
    over = m["decode_step_overhead_share"]
    assert over.verdict is None and 0 < over.value <= 100 and "ms per step" in over.detail
    assert "faster per token" in over.detail and "per-step overhead" in res.explanation
    assert "gpu_ridge" not in m  # the CUDA rows only with --device cuda
    assert (tmp_path / res.figures[0]).stat().st_size > 10_000

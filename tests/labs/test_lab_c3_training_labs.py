"""Labs C3.4, C3.5, C3.7, C3.8 in their quick budget: computed figures, plausible ranges."""

from __future__ import annotations

import math

import pytest
from verdict_checks import assert_flips, assert_verdict_follows, judged_measurements

from expkit.labs.base import AtLeast
from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def _run(lab_id, tmp_path):
    (lab,) = select_labs([lab_id])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    return res, {m.key: m for m in res.measurements}


def test_lab_c3_4_first_loss_near_ln_v_and_leak_caught(tmp_path):
    res, m = _run("C3.4", tmp_path)
    assert abs(m["first_loss"].value - math.log(128)) < 0.25
    assert m["first_loss"].verdict is None  # the seed's 5.07 is its own init on its data: shown, not judged
    assert m["first_over_ln_v"].value == m["first_loss"].value / math.log(128)
    assert m["first_loss_label_leak"].value < m["first_loss"].value - 0.5
    assert "fail" in m["first_loss_label_leak"].detail
    judged = judged_measurements(res)
    assert set(judged) == {"first_over_ln_v"}
    assert_verdict_follows(judged["first_over_ln_v"])
    # the contrary measurement is in the same run: the label leak's first loss
    assert_flips(judged["first_over_ln_v"], m["first_loss_label_leak"].value / math.log(128))
    assert "not reproduced" in m["first_loss_label_leak"].detail


def test_lab_c3_5_a_few_seconds_already_lower_ppl(tmp_path):
    res, m = _run("C3.5", tmp_path)
    assert 60 < m["ppl_start"].value < 160 and m["ppl_start"].verdict is None
    # training lowered it; how far depends on how much of the 4 s the shared cores gave (1-4 s of steps here)
    assert m["ppl_after_budget"].value < 0.9 * m["ppl_start"].value
    # quick trains 4 s: the seed's one-minute figure is not measured, and the report says what it needs
    judged = judged_measurements(res)
    assert set(judged) == {"ppl_end"} and judged["ppl_end"].verdict.kind == "not measured here"
    assert "60 s" in judged["ppl_end"].verdict.reason
    assert m["tokens_per_s"].value > 0
    # issue 36: the full budget's rule fed this run's real output: 4 s of training do not reach the seed's 9.6
    # (+10%), the seed's own one-minute figure does; the rule crosses between them
    from expkit.labs.lab_c3_5_one_minute import END_RULE, SEED_END

    assert END_RULE.judge(m["ppl_after_budget"].value).kind == "not reproduced", m["ppl_after_budget"].value
    assert END_RULE.judge(SEED_END.value).kind == "reproduced"


def test_lab_c3_7_needs_cuda_and_shows_the_cpu_with_its_spread(tmp_path):
    import torch

    from expkit.labs.lab_c3_7_item_sync import cuda_rule

    res, m = _run("C3.7", tmp_path)
    assert m["item_sync_cpu"].value > 0 and "median deviation" in m["item_sync_cpu"].detail
    assert m["item_sync_cpu"].verdict is None  # a CPU has no launch queue: shown, not judged
    judged = judged_measurements(res)
    assert set(judged) == {"item_sync_cuda"}
    if not torch.cuda.is_available():  # Needs only after checking the machine
        assert judged["item_sync_cuda"].verdict.kind == "not measured here"
        assert "CUDA" in judged["item_sync_cuda"].verdict.reason
    else:
        assert_verdict_follows(judged["item_sync_cuda"])
    # the CUDA rule, fed a sync cost and none: it flips, and a larger measured spread raises the bar
    assert cuda_rule(0.02).judge(1.4).kind == "reproduced"
    assert cuda_rule(0.02).judge(1.01).kind == "not reproduced"
    assert cuda_rule(0.3).judge(1.4).kind == "not reproduced"


def test_spread_is_robust_to_one_disturbed_run():
    from expkit.labs.lab_c3_7_item_sync import spread_of

    # C3.8's full run here: one of 7 runs hit by other work (10.39x); max - min would call the spread 160%
    runs = [4.12, 4.09, 3.79, 3.86, 10.39, 4.56, 4.12]
    assert 0.05 < spread_of(runs) < 0.07  # median |x - 4.12| = 0.26, / 4.12
    assert spread_of([1.0, 1.0, 1.0]) == 0.0


def test_c3_7_and_c3_8_judge_by_the_spread_first_stated():
    """issue 36: the spread changed from (max - min) / median to the median deviation after the run below flipped
    C3.8's verdict, and no words of the seed argue for it: the rules judge by the range, the other is shown."""
    import statistics

    from expkit.labs.lab_c3_7_item_sync import MAD, RULE_HISTORY, cuda_rule, range_spread_of, spread_of
    from expkit.labs.lab_c3_8_bf16_cpu import RULE_HISTORY as C38_HISTORY
    from expkit.labs.lab_c3_8_bf16_cpu import slower_rule

    runs = [4.12, 4.09, 3.79, 3.86, 10.39, 4.56, 4.12]  # C3.8's full run with one run disturbed by other work
    med = statistics.median(runs)
    assert range_spread_of(runs) == pytest.approx((10.39 - 3.79) / 4.12)
    assert slower_rule(range_spread_of(runs)).judge(med).kind == "not reproduced"  # as first stated
    assert slower_rule(spread_of(runs), MAD).judge(med).kind == "reproduced"  # the changed rule, shown beside
    assert "(max - min) / median" in str(slower_rule(0.1)) and "(max - min) / median" in str(cuda_rule(0.1))
    for history in (RULE_HISTORY, C38_HISTORY):
        (change,) = history
        assert change.commit == "ed5c74c" and change.judged_by.startswith("the rule as first stated")


def test_lab_c3_8_cpu_slowdown_judged_on_the_seeds_figure(tmp_path):
    import torch

    from expkit.labs.lab_c3_8_bf16_cpu import CUDA_RULE, cpu_cause

    res, m = _run("C3.8", tmp_path)
    judged = judged_measurements(res)
    assert set(judged) == {"bf16_slowdown", "bf16_slower", "bf16_gain_cuda"}
    slow = judged["bf16_slowdown"]
    assert slow.value > 0 and "fp32" in slow.detail and slow.value == judged["bf16_slower"].value
    for key in ("bf16_slowdown", "bf16_slower"):
        assert_verdict_follows(judged[key])
    # 'differs' only from the bf16 instructions read off this machine
    has_bf16 = m["cpu_bf16_instructions"].value is True
    assert (slow.verdict.kind == "differs") == (has_bf16 and not math.isclose(slow.value, 30.0, rel_tol=0.5))
    assert_flips(slow, 30.0 if slow.verdict.kind != "reproduced" else 4.0)
    # the bar is 1 + twice the runs' measured spread, so under load it can pass 3x: the contrary figure is read off
    # the rule this run stated (bf16 faster than fp32 when it held, half again over its bar when it did not)
    slower = judged["bf16_slower"]
    assert isinstance(slower.rule, AtLeast) and slower.rule.limit >= 1.05
    assert_flips(slower, 0.9 if slower.verdict.kind == "reproduced" else 1.5 * slower.rule.limit)
    # issue 36: judged by the spread as first stated, the range; the median deviation's verdict in the detail
    assert "(max - min) / median" in str(judged["bf16_slower"].rule)
    assert "under the changed rule" in judged["bf16_slower"].detail
    # issue 36: the cause is a bf16 matmul measured apart from the step, faster than fp32 on a CPU with bf16 units
    assert cpu_cause(False, 3.7, 0.3) is None and cpu_cause(True, 3.7, 0.3) is not None
    assert cpu_cause(True, 3.7, 2.5) is None  # bf16 instructions listed, yet the bf16 matmul was slower: no cause
    if slow.verdict.kind == "differs":
        assert "matmul (measured)" in slow.verdict.reason
        assert m["bf16_gemm_slowdown_cpu"].value < 1
    gain = judged["bf16_gain_cuda"]
    if not torch.cuda.is_available():
        assert gain.verdict.kind == "not measured here" and "tensor cores" in gain.verdict.reason
    else:
        assert_verdict_follows(gain)
    assert CUDA_RULE.judge(12.0).kind == "reproduced" and CUDA_RULE.judge(1.1).kind == "not reproduced"


def test_gpu_paths_of_c3_7_and_c3_8_run_end_to_end_on_a_stand_in_device():
    """The CUDA branches are the same functions with device="cuda"; here they run on the CPU with tiny shapes,
    so a GPU machine meets code that has run (the figures themselves mean nothing on a CPU)."""
    from expkit.labs import lab_c3_7_item_sync as c37
    from expkit.labs import lab_c3_8_bf16_cpu as c38
    from expkit.train import CharLMConfig

    tiny = CharLMConfig(n_layer=1, n_embd=32, n_head=2, block_size=32)
    row, text = c37.gpu_rows(device="cpu", name="stand-in", runs=2, seed=0, model_config=tiny, batch=2, seq=16)
    assert row.key == "item_sync_cuda" and row.value > 0 and "stand-in" in text
    assert_verdict_follows(row)
    gain, step, text = c38.gpu_rows(
        device="cpu", name="stand-in", runs=2, seed=0, gemm_n=64, batch=2, seq=16, model_config=tiny
    )
    assert gain.key == "bf16_gain_cuda" and gain.value > 0 and step.value > 0 and "stand-in" in text
    assert_verdict_follows(gain)


def test_lab_c3_4_label_leak_run_flips_the_verdict():
    """The lab's measurement run with the label shift forgotten (targets = inputs): the model can copy the
    answer, the first loss falls far under ln V, and 'about ln V' fails; the same inits with the shift hold."""
    from expkit.labs.lab_c3_4_first_loss import ABOUT_LN_V, measure_first_losses

    ln_v = math.log(128)
    shifted = measure_first_losses(seed=0, n_inits=1)[0]
    leaked = measure_first_losses(seed=0, n_inits=1, targets="same")[0]
    assert ABOUT_LN_V.judge(shifted / ln_v).kind == "reproduced"
    assert ABOUT_LN_V.judge(leaked / ln_v).kind == "not reproduced"


def test_c3_8_bf16_wins_from_is_the_start_of_the_last_winning_run():
    from expkit.labs.lab_c3_8_bf16_cpu import SizePoint, bf16_wins_from

    # the figures on a CPU with bf16 units: slower at 0.84M, faster at 3.2M and 12.8M
    pts = (SizePoint(128, 837_888, 1.3), SizePoint(256, 3_248_640, 0.54), SizePoint(512, 12_788_736, 0.41))
    assert bf16_wins_from(pts) == pts[1]
    # this CPU (no bf16 instructions): slower and slower with size
    here = (SizePoint(128, 837_888, 4.8), SizePoint(256, 3_248_640, 13.7), SizePoint(512, 12_788_736, 21.9))
    assert bf16_wins_from(here) is None
    # a win that does not last to the largest size is no crossover
    assert bf16_wins_from((SizePoint(64, 1, 0.9), SizePoint(128, 2, 1.2))) is None


def _skip_unless_bf16_can_win() -> None:
    """Skip, naming what was measured, when this CPU has no bf16 instructions (read from /proc/cpuinfo) and one bf16
    512 x 512 matmul, timed here, is slower than fp32: then no model size makes bf16 autocast win."""
    import torch

    from expkit.hardware.threads import torch_threads
    from expkit.perf.roofs import measure_gemm
    from expkit.train.probes import cpu_has_bf16_instructions

    has_bf16 = cpu_has_bf16_instructions()
    with torch_threads(1):
        g32 = measure_gemm(n=512, dtype="float32", repeats=3)
        g16 = measure_gemm(n=512, dtype="bfloat16", repeats=3)
    ratio = g32.best_flop_s / g16.best_flop_s
    if not has_bf16 and ratio > 1:
        flags = "could not be read" if has_bf16 is None else "lists neither avx512_bf16 nor amx_bf16"
        pytest.skip(
            f"measured: /proc/cpuinfo {flags} (torch CPU capability {torch.backends.cpu.get_cpu_capability()}) and "
            f"a bf16 512 x 512 matmul takes {ratio:.1f}x the fp32 time on 1 thread here: without bf16 units the "
            "matmuls that grow with the model stay slower in bf16, so no model size is expected to flip the verdict"
        )


def test_c3_8_a_model_size_where_bf16_wins_flips_the_slower_verdict():
    """On a CPU with bf16 units the lab's sweep, run up to a 12.8M char LM, finds a size where bf16 autocast is
    faster than fp32, and the 'bf16 on a CPU is slow' rule, fed that size's measured ratio, fails. (On a CPU
    without bf16 units, like the 2-core AMD EPYC this was written on, bf16 is slower at every size:
    4.8x at 0.84M, 13.7x at 3.2M, 21.9x at 12.8M; no input there flips it.)"""
    from expkit.hardware.threads import torch_threads
    from expkit.labs.lab_c3_8_bf16_cpu import bf16_wins_from, slower_rule, sweep_model_sizes

    _skip_unless_bf16_can_win()
    with torch_threads(1):
        pts = sweep_model_sizes((128, 512), seed=0, batch=4, seq=64)
    wins = bf16_wins_from(pts)
    assert wins is not None, pts
    assert slower_rule(0.05).judge(wins.slowdown).kind == "not reproduced"

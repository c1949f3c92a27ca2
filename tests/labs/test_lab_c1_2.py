"""Lab C1.2 times serial, 8 threads and 8 processes; timings are noisy, so the test checks that each verdict
is its rule applied to the measured speed-up, and that the contrary speed-up flips it."""

from __future__ import annotations

from verdict_checks import assert_flips, assert_verdict_follows, judged_measurements

from expkit.labs.lab_c1_2_gil import PROCESS_RULE, process_cause, thread_rule
from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_c1_2_reports_speedups(tmp_path):
    (lab,) = select_labs(["C1.2"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    assert 0.1 < m["serial_s"].value < 5  # calibrated to ~0.5 s; a loaded machine stretches it
    judged = judged_measurements(res)
    assert set(judged) == {"thread_speedup", "process_speedup"}
    for key in judged:
        assert_verdict_follows(judged[key])
    if judged["thread_speedup"].unit == "x":  # enough cores free of other work: threads judged
        assert 0.2 < m["thread_speedup"].value < 1.8
        assert_flips(judged["thread_speedup"], 8.0)  # threads running truly in parallel on 8 cores
    else:  # busy cores, measured: the claim could not be tested
        assert judged["thread_speedup"].verdict.kind == "not measured here"
    proc = judged["process_speedup"]
    assert 0.2 < proc.value < 8
    assert_flips(proc, 1.0 if proc.verdict.kind == "reproduced" else 3.1)
    if proc.verdict.kind == "differs":  # the cause names a figure measured in this run
        assert "cores free of other work during the run" in proc.verdict.reason


def test_c1_2_rules_and_causes_come_from_measured_figures():
    assert thread_rule(2.0).judge(1.02).kind == "reproduced"
    assert thread_rule(2.0).judge(1.9).kind == "not reproduced"  # threads nearly at the 2-core ceiling
    assert thread_rule(0.4).judge("0.40 cores free").kind == "not measured here"  # busy cores: no test possible
    # 2 idle cores, processes at 1.85x: the core count explains the gap to 3.1x
    cause = process_cause(1.85, cores=2, others_busy=0.1)
    assert PROCESS_RULE.judge(1.85, cause=cause).kind == "differs" and "= 1.9" in str(cause)
    # 2 idle cores but no parallel speed-up: nothing measured explains it
    assert process_cause(1.05, cores=2, others_busy=0.0) is None
    # ... unless other processes held the cores: 1.64 busy leaves 0.36, no room for a parallel speed-up
    assert "1.64 of them busy" in str(process_cause(0.83, cores=2, others_busy=1.64))
    # 8 idle cores: the cap is no excuse
    assert process_cause(1.9, cores=8, others_busy=0.0) is None


def _wait(n: int) -> int:
    """Work that releases the GIL (a sleep, like waiting on disk or network): the contrary input for C1.2."""
    import time

    time.sleep(0.05)
    return n


def test_c1_2_threads_rule_flips_on_work_that_releases_the_gil():
    """The lab's measurement (serial vs a thread pool through parallel_map, the same workers) run on work that
    releases the GIL: threads overlap the waits and speed it up ~N_WORKERS x, so 'threads give no speed-up' fails;
    on the lab's pure-Python work under the same rule it holds. The rule is the one for 2 free cores."""
    import time

    from expkit.data import parallel_map
    from expkit.labs.lab_c1_2_gil import N_WORKERS, _calibrate, thread_rule, tokenize_like

    def speedup(fn, items):
        t0 = time.perf_counter()
        [fn(x) for x in items]
        serial = time.perf_counter() - t0
        t0 = time.perf_counter()
        list(parallel_map(fn, items, workers=N_WORKERS, chunksize=1, backend="thread"))
        return serial / (time.perf_counter() - t0)

    rule = thread_rule(2.0)
    waits = speedup(_wait, [1] * (2 * N_WORKERS))
    assert rule.judge(waits).kind == "not reproduced", waits
    size = _calibrate(0.3)
    cpu = speedup(tokenize_like, [size] * (2 * N_WORKERS))
    assert rule.judge(cpu).kind == "reproduced", cpu

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
    assert m["serial_s"].value > 0  # calibrated to ~0.5 s; how far a loaded machine stretches it is no test
    judged = judged_measurements(res)
    assert set(judged) == {"thread_speedup", "process_speedup"}
    for key in judged:
        assert_verdict_follows(judged[key])
    if judged["thread_speedup"].unit == "x":  # enough cores free of other work: threads judged
        assert_flips(judged["thread_speedup"], 8.0)  # threads running truly in parallel on 8 cores
    else:  # busy cores, measured: the claim could not be tested
        assert judged["thread_speedup"].verdict.kind == "not measured here"
    proc = judged["process_speedup"]
    assert proc.value > 0
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

    time.sleep(0.1)
    return n


def _thread_pool_wall_s(fn, items) -> float:  # noqa: ANN001 - a callable
    """Wall time of the lab's thread pool (parallel_map, the lab's workers) over ``items``."""
    import time

    from expkit.data import parallel_map
    from expkit.labs.lab_c1_2_gil import N_WORKERS

    t0 = time.perf_counter()
    list(parallel_map(fn, items, workers=N_WORKERS, chunksize=1, backend="thread"))
    return time.perf_counter() - t0


def test_c1_2_threads_rule_flips_on_work_that_releases_the_gil():
    """The lab's thread pool run on work that releases the GIL overlaps the waits, so 'threads give no speed-up'
    fails; on the lab's pure-Python work under the same rule (the one for 2 free cores) it holds.

    Load-proof (issue 36): no speed-up threshold on two wall clocks that other processes stretch unevenly. The
    pure-Python run is compared with its measured reference in the same process, the serial work's own CPU time
    (time.process_time, which other processes do not stretch): a pool that ran on one core at a time can finish no
    faster than that, and load only slows it further. The waits are compared with their serial wall time: sleeps
    overlap whatever the load (8 workers, 16 waits of 0.1 s: 8x when idle, against the rule's 1.5x)."""
    import time

    from expkit.labs.lab_c1_2_gil import N_WORKERS, _calibrate, thread_rule, tokenize_like

    rule = thread_rule(2.0)
    waits = [1] * (2 * N_WORKERS)
    t0 = time.perf_counter()
    [_wait(x) for x in waits]
    serial_wall = time.perf_counter() - t0
    overlap = serial_wall / _thread_pool_wall_s(_wait, waits)
    assert rule.judge(overlap).kind == "not reproduced", overlap

    items = [_calibrate(0.3)] * (2 * N_WORKERS)
    c0 = time.process_time()
    [tokenize_like(x) for x in items]
    serial_cpu = time.process_time() - c0
    cpu = serial_cpu / _thread_pool_wall_s(tokenize_like, items)
    assert rule.judge(cpu).kind == "reproduced", cpu

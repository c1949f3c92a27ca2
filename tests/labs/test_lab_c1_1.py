"""Lab C1.1 measures list vs generator peak memory in fresh interpreters, judged on the seed's quantity
(the whole process's peak RSS at the seed's 19.4 MB file)."""

from __future__ import annotations

from verdict_checks import assert_flips, assert_verdict_follows, judged_measurements

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_c1_1_list_grows_generator_stays_flat(tmp_path):
    (lab,) = select_labs(["C1.1"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    # short records: a dict + small strs per line cost several times the bytes on disk
    assert 2.5 < m["list_ratio_above"].value < m["list_ratio"].value < 9
    assert 1.0 < m["list_ratio_chat"].value < m["list_ratio_above"].value  # long strings cost ~1 byte/char
    assert 5 < m["generator_peak"].value < 60  # a whole interpreter: MB, not the pipeline's few KB
    assert abs(m["generator_flat"].value) < 0.05
    assert m["list_peak_largest"].value > 1.7 * m["list_ratio"].value * 19.4  # 2x the file: the list ~doubles
    assert (tmp_path / res.figures[0]).stat().st_size > 10_000

    judged = judged_measurements(res)
    assert set(judged) == {"list_ratio", "generator_peak", "generator_flat"}
    for key in judged:
        assert_verdict_follows(judged[key])
    lst = judged["list_ratio"]  # contrary: a list costing little more than the file, or the seed's 5.3x
    assert_flips(lst, 1.2 if lst.verdict.kind == "reproduced" else 5.3)
    gen = judged["generator_peak"]
    # the contrary of what was found: a "generator" holding the whole file, or a process as small as the seed's
    assert_flips(gen, 200.0 if gen.verdict.kind == "reproduced" else 11.0)
    assert_flips(judged["generator_flat"], 4.5)  # a pipeline growing like the list
    if gen.verdict.kind == "differs":  # only when the interpreter alone, measured, is over the limit
        assert "interpreter RSS before the first line" in gen.verdict.reason


def test_c1_1_interpreter_explains_the_generator_peak_only_when_the_pipeline_held_little():
    from expkit.labs.lab_c1_1_streaming import GEN_RULE, generator_cause

    # an interpreter of 20 MB and a pipeline of 0.04 MB on a 19.4 MB file: the interpreter is the gap
    cause = generator_cause(baseline_mb=20.0, own_mb=0.04, file_mb=19.4)
    assert cause is not None and GEN_RULE.judge(20.04, cause=cause).kind == "differs"
    # the same interpreter, but a "generator" that held the file: nothing here excuses it
    assert generator_cause(baseline_mb=20.0, own_mb=60.0, file_mb=19.4) is None
    assert GEN_RULE.judge(80.0, cause=None).kind == "not reproduced"
    # a small interpreter is no cause at all
    assert generator_cause(baseline_mb=9.0, own_mb=0.04, file_mb=19.4) is None

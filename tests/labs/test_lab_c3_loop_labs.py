"""Labs C3.1, C3.2, C3.3, C3.6 in their quick budget: status ok and measured values that could have failed."""

from __future__ import annotations

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def _run(lab_id, tmp_path):
    (lab,) = select_labs([lab_id])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    return res, {m.key: m for m in res.measurements}


def test_lab_c3_1_traces_the_protocol_in_loop_order(tmp_path):
    _, m = _run("C3.1", tmp_path)
    assert m["loop_objects"].verdict.kind == "reproduced"
    assert m["loop_objects"].value.startswith("Dataset.__getitem__ x 4 -> Module.__call__")
    assert m["grads_per_step"].value == 36  # 4 blocks x 8 tensors + wte + wpe + ln_f (2); head tied


def test_lab_c3_2_accumulation_and_growth(tmp_path):
    res, m = _run("C3.2", tmp_path)
    assert m["accumulation"].value < 1e-5 and m["accumulation"].verdict.kind == "reproduced"
    assert abs(m["accumulation_no_divide"].value - 3.0) < 1e-3  # k = 4: ||4g - g|| / ||g||
    assert m["missing_zero_grad"].value > 2
    assert (tmp_path / res.figures[0]).is_file()


def test_lab_c3_3_memory_grows_only_without_no_grad(tmp_path):
    _, m = _run("C3.3", tmp_path)
    assert m["eval_memory_no_grad"].value == 0
    assert m["eval_memory"].value > 5 * m["eval_memory_item"].value > 0  # 6 steps kept vs 1 step
    assert m["eval_memory"].verdict.kind == "reproduced"


def test_lab_c3_6_loop_lr_matches_the_drawn_schedule(tmp_path):
    res, m = _run("C3.6", tmp_path)
    assert m["schedule"].value == 0 and m["schedule"].verdict.kind == "reproduced"
    assert m["loop_choices"].verdict.kind == "reproduced"
    assert res.figures and res.figures[0].endswith("c3_6_lr_schedule.png")

"""parse_traceback on real tracebacks (formatted from live exceptions) and on the odd text logs hold."""

from __future__ import annotations

import sys
import traceback

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expkit.diagnose import classify_frame, collapse_frames, parse_traceback

SITE = "/venv/lib/python3.11/site-packages"


def _text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def _recurse(depth: int) -> None:
    if depth == 0:
        raise ValueError(f"bottom {depth}")
    _recurse(depth - 1)


@given(depth=st.integers(min_value=0, max_value=40))
@settings(max_examples=25, deadline=None)
def test_parse_recovers_the_innermost_frame_of_a_live_exception(depth):
    try:
        _recurse(depth)
    except ValueError as exc:
        text = _text(exc)
        tb = parse_traceback(text)
        inner = traceback.extract_tb(exc.__traceback__)[-1]
    assert tb.final.type == "ValueError" and tb.final.message == "bottom 0"
    assert tb.chosen_frame.line == inner.lineno and tb.chosen_frame.function == "_recurse"
    assert tb.chosen_frame.file == __file__ and tb.chosen_frame.kind == "yours"
    # Python prints at most 3 identical frames, then "[Previous line repeated N more times]"
    assert len(tb.final.frames) == text.count('\n  File "')


@pytest.mark.parametrize(
    "path,kind",
    [
        (f"{SITE}/torch/nn/modules/module.py", "framework"),
        ("/home/me/src/transformers/src/transformers/trainer.py", "framework"),  # editable install
        ("/usr/lib/python3.11/multiprocessing/pool.py", "stdlib"),
        ("<frozen runpy>", "stdlib"),
        ("/home/me/train.py", "yours"),
        ("/home/me/datasets/prepare.py", "yours"),  # a folder named like a package is still yours
        ("/home/me/pytorch/torch/nn/modules/module.py", "framework"),  # a torch source checkout
        ("/home/me/peft/peft/tuners/lora.py", "framework"),
        ("<stdin>", "yours"),
        ("/tmp/ipykernel_123/3412.py", "yours"),
    ],
)
def test_classify_frame(path, kind):
    assert classify_frame(path) == kind


def test_chained_exceptions_keep_order_and_links():
    def load(cfg):
        return cfg["lr"]

    try:
        try:
            load({})
        except KeyError as e:
            raise ValueError("config has no learning rate") from e
    except ValueError as exc:
        text = _text(exc)
    tb = parse_traceback(text)
    assert [e.type for e in tb.exceptions] == ["KeyError", "ValueError"]
    assert [e.link for e in tb.exceptions] == [None, "cause"]
    assert tb.exceptions[0].message == "'lr'"
    # the final exception has frames of yours: its last one is the place to look
    assert tb.chosen_index == 1 and "raise ValueError" in tb.chosen_frame.code

    try:
        try:
            {}["x"]
        except KeyError:
            _ = 1 / 0
    except ZeroDivisionError as exc:
        tb2 = parse_traceback(_text(exc))
    assert [e.link for e in tb2.exceptions] == [None, "context"]


def _rank_lines(rank: int, text: str) -> list[str]:
    return [f"[rank{rank}]: {line}" for line in text.splitlines()]


def test_torchrun_output_picks_the_first_failing_rank_and_dedups_identical_ones():
    body = (
        "Traceback (most recent call last):\n"
        '  File "/work/train.py", line 30, in <module>\n    main()\n'
        '  File "/work/train.py", line 21, in main\n    out = model(x.to("cuda:{r}"))\n'
        f'  File "{SITE}/torch/nn/modules/module.py", line 1778, in _wrapped_call_impl\n'
        "    return self._call_impl(*args, **kwargs)\n"
        "RuntimeError: CUDA error on cuda:{r}: device-side assert triggered\n"
    )
    r0, r1 = _rank_lines(0, body.replace("{r}", "0")), _rank_lines(1, body.replace("{r}", "1"))
    interleaved = [x for pair in zip(r1, r0, strict=True) for x in pair]  # rank 1 printed first, lines interleaved
    launcher = (
        "W1129 12:00:00.000 torch/distributed/elastic/multiprocessing/api.py:900] "
        "Sending process 7 closing signal\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "Root Cause (first observed failure):\n[0]:\n  time      : 2026-11-29_12:00:00\n"
        "  rank      : 0 (local_rank: 0)\n  exitcode  : 1 (pid: 7)\n"
    )
    tb = parse_traceback("\n".join(interleaved) + "\n" + launcher)
    assert tb.rank == 0  # torchrun's "Root Cause" names rank 0
    assert tb.failed_ranks == (0, 1) and tb.identical_ranks == (1,)
    assert tb.chosen_frame.line == 21 and tb.chosen_frame.file == "/work/train.py"
    # without a root-cause block the first rank to print wins
    assert parse_traceback("\n".join(interleaved)).rank == 1


def test_mangled_indentation_still_finds_frames_and_exception():
    try:
        _recurse(3)
    except ValueError as exc:
        text = _text(exc)
    flat = "\n".join(line.strip() for line in text.splitlines())
    tb = parse_traceback(flat)
    assert tb.final.type == "ValueError" and tb.chosen_frame.function == "_recurse"
    assert tb.chosen_frame.code == 'raise ValueError(f"bottom {depth}")'


def test_cut_paste_keeps_frames_and_warns():
    try:
        _recurse(3)
    except ValueError as exc:
        text = _text(exc)
    cut = "\n".join(text.splitlines()[:5])
    tb = parse_traceback(cut)
    assert tb.final.type == "<unknown>" and tb.chosen_frame is not None
    assert any("cut before its exception line" in w for w in tb.warnings)


def test_text_without_traceback_says_so():
    tb = parse_traceback("epoch 1 loss 2.3\nepoch 2 loss 2.1\n")
    assert tb.exceptions == () and tb.chosen_frame is None
    assert "no traceback found" in tb.warnings[0]


@given(
    st.text(
        alphabet=st.sampled_from(list('File "line, in\n:[rank0]Traceback (most recent call last)^~ 12Error')),
        max_size=400,
    )
)
@settings(max_examples=150, deadline=None)
def test_garbage_never_crashes(text):
    tb = parse_traceback(text)
    assert isinstance(tb.warnings, tuple)


def test_collapse_keeps_yours_and_groups_framework_runs():
    text = (
        "Traceback (most recent call last):\n"
        '  File "/me/a.py", line 1, in <module>\n    f()\n'
        f'  File "{SITE}/torch/nn/modules/module.py", line 1, in _call_impl\n    x\n'
        f'  File "{SITE}/torch/nn/modules/linear.py", line 2, in forward\n    y\n'
        '  File "/usr/lib/python3.11/functools.py", line 3, in wrapper\n    z\n'
        '  File "/me/b.py", line 4, in g\n    w\n'
        "RuntimeError: x\n"
    )
    groups = collapse_frames(parse_traceback(text).final.frames)
    assert [(len(g.frames), g.collapsed) for g in groups] == [(1, False), (3, True), (1, False)]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="ExceptionGroup is a Python 3.11 builtin")
def test_exception_group_sub_tracebacks_are_parsed():
    def fail(i):
        raise ValueError(f"sub {i}")

    errors = []
    for i in range(2):
        try:
            fail(i)
        except ValueError as e:
            errors.append(e)
    try:
        raise ExceptionGroup("two failed", errors)  # noqa: F821 - a 3.11 builtin; the test is for 3.11+
    except ExceptionGroup as exc:  # noqa: F821 - as above
        text = _text(exc)
    tb = parse_traceback(text)
    assert [e.type for e in tb.exceptions] == ["ExceptionGroup", "ValueError", "ValueError"]
    assert [e.message for e in tb.exceptions[1:]] == ["sub 0", "sub 1"]
    assert tb.exceptions[1].frames[-1].function == "fail"


def test_real_torchrun_log_picks_the_root_cause_rank():
    # recorded here: torchrun --nproc-per-node 2 (torch 2.13.0+cpu, gloo) of a script whose rank 1 feeds
    # 12 features to nn.Linear(16, 4); rank 0 was then SIGTERMed by the launcher
    from pathlib import Path

    text = (Path(__file__).parent / "fixtures" / "torchrun_rank1_shape.log").read_text()
    tb = parse_traceback(text)
    assert tb.rank == 1 and tb.failed_ranks == (1,)
    assert tb.final.type == "RuntimeError" and "(8x12 and 16x4)" in tb.final.message
    assert (tb.chosen_frame.file, tb.chosen_frame.line, tb.chosen_frame.code) == (
        "/tmp/h4/tr/ddp_fail.py",
        12,
        "out = model(x)",
    )
    from expkit.diagnose import explain

    assert explain(tb).module == "model -> nn.Linear"  # the callee on the chosen line entered nn.Module

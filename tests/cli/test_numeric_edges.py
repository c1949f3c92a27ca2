"""Numeric edges end as a result or one line, exit 2, never a traceback (issue 36): ``stats ci --level
0.9999999999999999`` (0.5 + level / 2 rounded to 1.0), ``compare --level nan``, ``plot`` on +-1e308, ``plot
--out`` a FIFO (it hung), ``sft demo-model --out`` on a full disk, integers past 2**64 and 10**400.

Generated families, each case a real process (``expkit_procs.run_many``): every command with a ``--level``
option (read from the command tree) times hostile levels; every option that takes a count times huge
integers; curve values over a grid of magnitudes; integers past 64 bits in each field of each file reader.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from expkit_procs import one_line_or_result, run_many

BAD_LEVELS = ["nan", "inf", "-inf", "0", "1", "-0.5", "1.5", "-0"]
EDGE_LEVELS = ["0.9999999999999999", "1e-300", "5e-324", "0.5"]
HUGE_INTS = [str(2**64 + 1), str(-(2**70)), str(10**400)]
MAGNITUDES = [1e308, -1e308, 1.7976931348623157e308, 1e151, 5e-324]


def _options_of(flag: str) -> list[list[str]]:
    """The command paths whose command takes ``flag``, read from the app."""
    import typer

    from expkit.cli.app import app

    def walk(cmd, path):  # noqa: ANN001, ANN202
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in sorted(subs.items()):
                yield from walk(sub, [*path, name])
        elif any(flag in p.opts for p in cmd.params):
            yield path

    return list(walk(typer.main.get_command(app), []))


def _items(tmp_path: Path) -> Path:
    data = tmp_path / "items.jsonl"
    rows = [{"model": m, "item": i, "score": (i * 3 + j) % 2} for j, m in enumerate("abc") for i in range(30)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data


def _minimal_args(path: list[str], items: Path) -> list[str]:
    """Arguments that let each --level command reach its computation."""
    return {
        ("stats", "ci"): ["-k", "40", "-n", "80"],
        ("stats", "table"): [str(items)],
        ("stats", "leaderboard"): [str(items)],
        ("compare",): ["a", "b", "--store", str(items.parent / "no-store")],
    }.get(tuple(path), [])


@pytest.mark.slow  # ~20-40 processes: 10-25 CPU-s
def test_every_level_option_refuses_bad_levels_and_computes_edge_ones(tmp_path: Path) -> None:
    items = _items(tmp_path)
    commands = _options_of("--level")
    assert ["stats", "ci"] in commands and ["compare"] in commands
    cases = [[*path, *_minimal_args(path, items), f"--level={level}"] for path in commands for level in BAD_LEVELS]
    cases += [  # levels that are valid: computed (leaderboard's bootstrap is left out: seconds per case)
        [*path, *_minimal_args(path, items), f"--level={level}"]
        for path in (["stats", "ci"], ["stats", "table"])
        for level in EDGE_LEVELS
    ]
    problems = []
    for ran in run_many(cases, tmp_path / "procs"):
        level = ran.argv[-1].split("=", 1)[1]
        found = one_line_or_result(ran)
        if level in BAD_LEVELS and not (ran.code == 2 and "--level" in ran.stderr):
            found.append(f"exit {ran.code}, --level not named")
        if found:
            problems.append((ran.argv, found, ran.stderr[-300:]))
    assert not problems, f"{len(problems)} of {len(cases)}: {problems[:4]}"


def test_stats_ci_at_a_level_just_below_one_is_finite(tmp_path: Path) -> None:
    [ran] = run_many([["stats", "ci", "-k", "40", "-n", "80", "--level", "0.9999999999999999", "--json"]], tmp_path)
    assert ran.code == 0, ran.stderr
    result = json.loads(ran.stdout)["result"]
    assert 0.0 < result["low"] < 0.5 < result["high"] < 1.0  # z = 8.29, not the inf that raised


def test_count_options_with_huge_integers_end_in_one_line(tmp_path: Path) -> None:
    items = _items(tmp_path)
    base = {
        ("stats", "ci", "-n"): ["stats", "ci", "-k", "1"],
        ("stats", "ci", "-k"): ["stats", "ci", "-n", "10"],
        ("stats", "power", "--n"): ["stats", "power", "--baseline", "0.5", "--delta", "0.05"],
        ("data", "head", "-n"): ["data", "head", str(items)],
        ("data", "sample", "-n"): ["data", "sample", str(items)],
        ("data", "sample", "--seed"): ["data", "sample", str(items), "-n", "2"],
        # round five: numpy's "Maximum allowed dimension exceeded" and torch's TypeError, exit 3
        ("stats", "leaderboard", "--boot"): ["stats", "leaderboard", str(items)],
        ("roofline", "decode", "--batch-sizes"): ["roofline", "decode", "--new-tokens", "2"],
        ("roofline", "decode", "--new-tokens"): ["roofline", "decode", "--batch-sizes", "1"],
    }
    cases = [[*argv, key[-1], big] for key, argv in base.items() for big in HUGE_INTS]
    # options of commands that run a program after `--` (round five: OverflowError and MemoryError, exit 3)
    cases += [
        [*cmd, flag, big, "--", "false"]
        for cmd, flag in ((["profile"], "--timeout"), (["runs", "determinism"], "--seeds"))
        for big in HUGE_INTS
    ]
    cases += [["stats", "power", "--baseline", "0.5", "--delta", "0.05", "--alpha", a] for a in ("5e-324", "1e-17")]
    problems = [(r.argv[-2:], one_line_or_result(r), r.stderr[-300:]) for r in run_many(cases, tmp_path / "p")]
    problems = [p for p in problems if p[1]]
    assert not problems, f"{len(problems)} of {len(cases)}: {problems[:4]}"


def _curve_file(folder: Path, value: float, where: int) -> Path:
    path = folder / f"c{where}_{value!r}.jsonl"
    rows = [
        {"seed": s, "step": step + 1, "loss": value if (step == where and s != 1) else 1.0 + step + s}
        for s in range(3)
        for step in range(4)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.slow  # ~20-40 processes: 10-25 CPU-s
def test_plot_on_extreme_values_draws_or_says_one_line(tmp_path: Path) -> None:
    cases = []
    for value, where in zip(MAGNITUDES, itertools.cycle((0, 3)), strict=False):
        src = _curve_file(tmp_path, value, where)
        cases.append(["plot", "curves", str(src), "--out", str(src.with_suffix(".png")), "--linear-x"])
    big_x = tmp_path / "bigx.jsonl"  # steps near 1e308 on the log axis
    big_x.write_text(
        "".join(json.dumps({"seed": s, "step": x, "loss": 1.0 + s}) + "\n" for s in range(2) for x in (1, 1e307, 1e308))
    )
    cases.append(["plot", "curves", str(big_x), "--out", str(tmp_path / "bigx.png")])
    problems = []
    for ran in run_many(cases, tmp_path / "procs"):
        found = one_line_or_result(ran)
        if ran.stderr.strip() and ran.code == 0:
            found.append("warnings on stderr")
        if ran.code == 0 and not Path(ran.argv[4]).is_file():
            found.append("exit 0 without a figure")
        if found:
            problems.append((ran.argv[2], found, ran.stderr[-300:]))
    assert not problems, f"{len(problems)} of {len(cases)}: {problems[:4]}"


def test_a_figure_out_that_is_not_a_regular_file_is_refused_without_hanging(tmp_path: Path) -> None:
    src = _curve_file(tmp_path, 2.0, 0)
    fifo = tmp_path / "fig.png"
    os.mkfifo(fifo)  # no reader ever comes: the write blocked forever
    folder = tmp_path / "dir.svg"
    folder.mkdir()
    cases = [["plot", "curves", str(src), "--out", str(out)] for out in (fifo, folder)]
    for ran in run_many(cases, tmp_path / "procs", timeout_s=60):
        assert ran.code == 2, (ran.code, ran.stderr)  # -14: the alarm ended a hang
        assert one_line_or_result(ran) == [] and "not a regular file" in ran.stderr


@pytest.mark.slow  # ~20-40 processes: 10-25 CPU-s
def test_integers_past_64_bits_in_every_reader_field(tmp_path: Path) -> None:
    cases = []
    for i, big in enumerate([2**64 + 1, 10**400]):
        records = tmp_path / f"r{i}.jsonl"
        records.write_text(f'{{"id": {big}, "text": "a", "n": [{big}]}}\n{{"id": 1, "text": "b"}}\n')
        cases += [["data", cmd, str(records)] for cmd in ("stats", "head")]
        cases.append(["data", "head", str(records), "--json"])
        for field in ("score", "item"):
            items = tmp_path / f"i{i}{field}.jsonl"
            rows = [{"model": m, "item": k, "score": k % 2} for m in "ab" for k in range(6)]
            rows[0][field] = big
            items.write_text("".join(json.dumps(r) + "\n" for r in rows))
            cases.append(["stats", "table", str(items), "--json"])
        curve = tmp_path / f"c{i}.jsonl"
        curve.write_text(
            "".join(
                f'{{"seed": {s}, "step": {k + 1}, "loss": {big if k == 2 else 1}}}\n'
                for s in range(2)
                for k in range(4)
            )
        )
        cases.append(["plot", "curves", str(curve), "--out", str(tmp_path / f"c{i}.png")])
    problems = [(r.argv, one_line_or_result(r), r.stderr[-300:]) for r in run_many(cases, tmp_path / "procs")]
    problems = [p for p in problems if p[1]]
    assert not problems, f"{len(problems)} of {len(cases)}: {problems[:4]}"
    # past 64 bits read exactly; 10**400 (past float64 too) is one line naming FILE:LINE
    exact, huge = run_many([["data", "head", str(tmp_path / f"r{i}.jsonl"), "--json"] for i in (0, 1)], tmp_path / "x")
    assert json.loads(exact.stdout)["result"]["records"][0]["record"]["id"] == 2**64 + 1
    assert huge.code == 2 and "r1.jsonl:1:" in huge.stderr


# ---- a full disk: sft demo-model --out --------------------------------------------------------------------


def test_a_full_disk_under_the_demo_model_copy_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # shutil.copytree gathers its ENOSPCs into a shutil.Error without an errno: it was a traceback, exit 3
    from expkit.errors import InputError
    from expkit.finetune import demomodel

    def full(src: object, dst: object, **kw: object) -> None:
        raise shutil.Error([(str(src), str(dst), "[Errno 28] No space left on device: 'model.safetensors'")])

    monkeypatch.setattr(
        demomodel,
        "ensure_demo_model",
        lambda quick: demomodel.DemoModel(
            path=tmp_path,
            spec=demomodel.demo_model_spec(quick=True),
            parameters=1,
            pretrain_loss_first=1.0,
            pretrain_loss_last=1.0,
            build_s=0.0,
            cached=True,
        ),
    )
    monkeypatch.setattr(shutil, "copytree", full)
    with pytest.raises(InputError) as err:
        demomodel.provide_demo_model(out=tmp_path / "out", quick=True)
    assert "no space left on the device" in str(err.value) and "MB free" in str(err.value)
    assert str(err.value.path) == str(tmp_path / "out")


def _can_mount() -> bool:
    return sys.platform == "linux" and os.geteuid() == 0 and shutil.which("mount") is not None


@pytest.mark.slow  # builds the quick demo model on a cold cache (~15 s)
@pytest.mark.skipif(not _can_mount(), reason="needs root to mount a 256 KiB tmpfs")
def test_sft_demo_model_on_a_full_disk_is_one_line_exit_2(tmp_path: Path) -> None:
    disk = tmp_path / "small"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("mount refused (a container without CAP_SYS_ADMIN)")
    try:
        res = subprocess.run(
            [sys.executable, "-m", "expkit", "sft", "demo-model", "--quick", "--out", str(disk / "demo")],
            capture_output=True,
            text=True,
            timeout=600,
            stdin=subprocess.DEVNULL,
        )
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True)
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert res.returncode == 2, res.stderr[-2000:]
    assert len(lines) == 1 and str(disk / "demo") in lines[0] and "MB free" in lines[0], lines

"""Hostile inputs of issue 36, run as real processes (``python -m expkit``): hangs and deep nesting.

Each family is generated from parameters (quantifier shapes, fork depths, nesting depths), not listed case
by case. A hang shows as a TimeoutExpired after a generous limit (load-proof: nothing here races a clock);
the process is killed and the test fails naming the command.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

EXPKIT = [sys.executable, "-m", "expkit"]
HANG_S = 60  # a case that ends in well under a second ends far inside this, even at load 10


def _expkit(*args: str | Path, cwd: Path | None = None, timeout: float = HANG_S) -> subprocess.CompletedProcess[str]:
    """``expkit ARGS`` as a process; a process still running after ``timeout`` seconds fails the test."""
    argv = [*EXPKIT, *map(str, args)]
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung: {' '.join(argv)} still ran after {timeout} s")


def _expkit_all(
    *argvs: list[str | Path], timeout: float = HANG_S * 2, env: dict[str, str] | None = None
) -> list[subprocess.CompletedProcess[str]]:
    """``expkit ARGS`` for each ARGS, all started at once (the family ends in the time of its slowest)."""
    started = []
    for args in argvs:
        argv = [*EXPKIT, *map(str, args)]
        popen = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env={**os.environ, **(env or {})},
        )
        started.append((argv, popen))
    done = []
    try:
        for argv, popen in started:
            try:
                out, err = popen.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                pytest.fail(f"hung: {' '.join(argv)} still ran after {timeout} s")
            done.append(subprocess.CompletedProcess(argv, popen.returncode, out, err))
    finally:
        for _, popen in started:
            popen.kill()
            popen.wait()
    return done


def _no_traceback(res: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in res.stderr and "RecursionError" not in res.stderr, res.stderr[-3000:]


# --- regexes with nested quantifiers --------------------------------------------------------------------
# The shape (X+)+ with X a string that can match the same text in many ways: Python's re tries every split
# of "aaaa...a!" (2^n) before it fails. The generated family: every inner atom under every outer quantifier.
_INNER = ("a+", "a*", "a|a", "a|aa", "aa?", r"\w+\s?")
_OUTER = ("+", "*", "{1,}", "{2,}")
NESTED_PATTERNS = [
    f"^(?:{inner}){outer}$" if "|" not in inner else f"^({inner}){outer}$"
    for inner, outer in itertools.product(_INNER, _OUTER)
]


def test_nested_quantifier_patterns_do_not_backtrack(tmp_path: Path) -> None:
    props = {f"p{i}": {"type": "string", "pattern": p} for i, p in enumerate(NESTED_PATTERNS)}
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"properties": props}))
    evil = "a" * 48 + "!"  # ~2^48 paths for Python's re
    good = "a" * 48
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps(dict.fromkeys(props, evil)) + "\n" + json.dumps(dict.fromkeys(props, good)) + "\n")
    res = _expkit("data", "validate", data, "--schema", schema, "--json")
    _no_traceback(res)
    assert res.returncode == 1, res.stderr[-2000:]
    report = json.loads(res.stdout)["result"]
    # every pattern refuses the evil line 1 and accepts the plain run of a's on line 2 (the same answers re gives)
    assert sorted((v["line"], v["where"]) for v in report["violations"]) == sorted((1, k) for k in props)


# Patterns RE2 cannot run (lookaround) go to the `regex` module with a time limit: the family's nested
# alternations under each lookaround end as one line naming the pattern (exit 2), not a hang.
_LOOKAROUNDS = ("(?<=x)", "(?<!y)", "(?=[xa])")
_ALTERNATIONS = ("(a|a)*$", "(a|aa)+$")
LOOKAROUND_PATTERNS = [pre + body for pre, body in itertools.product(_LOOKAROUNDS, _ALTERNATIONS)]


@pytest.mark.slow  # six expkit processes: ~35 s on 2 loaded cores
def test_lookaround_patterns_run_out_of_time_in_one_line(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"s": "x" + "a" * 40 + "!"}) + "\n")
    argvs = []
    for i, pattern in enumerate(LOOKAROUND_PATTERNS):
        schema = tmp_path / f"schema{i}.json"
        schema.write_text(json.dumps({"properties": {"s": {"type": "string", "pattern": pattern}}}))
        argvs.append(["data", "validate", data, "--schema", schema])
    # a short limit (CPU seconds): the families' matches would run for ever, any limit ends them
    results = _expkit_all(*argvs, env={"EXPKIT_PATTERN_TIMEOUT_S": "0.2"})
    for pattern, res in zip(LOOKAROUND_PATTERNS, results, strict=True):
        _no_traceback(res)
        assert res.returncode == 2, (pattern, res.stderr[-2000:])
        assert f"schema pattern {pattern!r} did not finish within" in res.stderr, (pattern, res.stderr[-2000:])


# --- daemons and forks that keep the command's stdout open ----------------------------------------------
# A command that exits at once but leaves a descendant holding its stdout: `depth` forks deep, with or without
# setsid (a daemon leaves the process group), quiet or writing every 0.1 s. `runs exec` waited for the pipe to
# close, i.e. forever. The descendant writes its pid so the test can end it.
_LEAVER = """
import os, sys, time
depth, setsid, chatty, pidfile = int(sys.argv[1]), sys.argv[2] == "1", sys.argv[3] == "1", sys.argv[4]
print("started", flush=True)
for level in range(depth):
    if os.fork():
        os._exit(0)  # each parent exits: the last descendant is left behind
    if setsid and level == 0:
        os.setsid()
with open(pidfile, "w") as fh:
    fh.write(str(os.getpid()))
for _ in range(3000):
    if chatty:
        print("still here", flush=True)
    time.sleep(0.1)
"""
LEAVERS = list(itertools.product((1, 3), (False, True), (False, True)))  # depth, setsid, chatty


def _end_pid_in(path: Path) -> None:
    import signal

    with contextlib.suppress(OSError, ValueError):  # already gone (killed with its group), or never written
        os.kill(int(path.read_text()), signal.SIGKILL)


@pytest.mark.slow  # eight runs exec at once, each waiting its 5 s grace: ~35 s on 2 loaded cores
def test_a_command_that_leaves_a_stdout_holder_does_not_hang_runs_exec(tmp_path: Path) -> None:
    script = tmp_path / "leaver.py"
    script.write_text(_LEAVER)
    procs = []
    for depth, setsid, chatty in LEAVERS:
        tag = f"d{depth}-s{int(setsid)}-c{int(chatty)}"
        argv = [*EXPKIT, "runs", "exec", "--store", str(tmp_path / "store"), "--name", tag, "--json", "--"]
        argv += [sys.executable, str(script), str(depth), str(int(setsid)), str(int(chatty)), str(tmp_path / tag)]
        procs.append((tag, argv, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    try:
        for tag, argv, proc in procs:  # all at once: each waits its grace period in parallel
            try:
                out, err = proc.communicate(timeout=HANG_S * 2)
            except subprocess.TimeoutExpired:
                pytest.fail(f"hung: {' '.join(argv)} still ran after {HANG_S * 2} s")
            assert proc.returncode == 0, (tag, err[-2000:])
            rec = json.loads(out)["result"]
            assert rec["status"] == "finished", (tag, rec)
            run_json = json.loads((Path(rec["run_dir"]) / "run.json").read_text())
            assert "kept its stdout/stderr open" in run_json["status_reason"], (tag, run_json["status_reason"])
            assert (Path(rec["run_dir"]) / "output.log").read_text().startswith("started\n"), tag
    finally:
        for tag, _, proc in procs:
            proc.kill()
            _end_pid_in(tmp_path / tag)


_IGNORES_TERM = """
import pathlib, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
pathlib.Path(sys.argv[1]).write_text("ready")
time.sleep(300)
"""


def test_a_command_that_ignores_sigterm_gets_sigkill(tmp_path: Path) -> None:
    import signal

    script = tmp_path / "stubborn.py"
    script.write_text(_IGNORES_TERM)
    ready = tmp_path / "ready"
    argv = [*EXPKIT, "runs", "exec", "--store", str(tmp_path / "store"), "--json", "--"]
    argv += [sys.executable, str(script), str(ready)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(HANG_S * 10):  # the command ignores SIGTERM from here on (runs exec forwards it by then)
        if ready.exists() or proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=HANG_S * 2)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("runs exec never escalated to SIGKILL after SIGTERM")
    rec = json.loads(out)["result"]
    assert rec["status"] == "killed", rec
    run_json = json.loads((Path(rec["run_dir"]) / "run.json").read_text())
    assert "got SIGKILL" in run_json["status_reason"], run_json


# --- FIFOs in a run store -------------------------------------------------------------------------------
# A store file replaced by a FIFO with no writer: opening it for reading blocks until a writer comes, i.e.
# for ever. Every (file, command) pair of the family must end, with the run listed as broken where its
# run.json is the FIFO.
FIFO_FILES = ("run.json", "metrics.jsonl", "code.patch")
FIFO_COMMANDS = (("runs", "ls"), ("runs", "show", "{run}"), ("runs", "diff", "{run}", "{other}"))


def _two_runs(store: Path) -> tuple[Path, Path]:
    for name in ("first", "second"):
        res = _expkit("runs", "exec", "--store", store, "--name", name, "--", sys.executable, "-c", "print('{}')")
        assert res.returncode == 0, res.stderr[-2000:]
    first, second = sorted(p for p in store.iterdir() if p.is_dir() and not p.name.startswith("."))
    return first, second


@pytest.mark.slow  # nine expkit processes plus two runs: ~40 s on 2 loaded cores
def test_fifos_in_a_run_store_never_block(tmp_path: Path) -> None:
    template = tmp_path / "template"
    first, second = _two_runs(template)
    cases, argvs = [], []
    for fifo_name, command in itertools.product(FIFO_FILES, FIFO_COMMANDS):
        store = tmp_path / f"{fifo_name}-{command[1]}"
        subprocess.run(["cp", "-a", str(template), str(store)], check=True)
        target = store / first.name / fifo_name
        target.unlink(missing_ok=True)
        os.mkfifo(target)
        args = [a.format(run=first.name, other=second.name) for a in command]
        cases.append((fifo_name, args))
        argvs.append([*args, "--store", store])
    for (fifo_name, args), res in zip(cases, _expkit_all(*argvs), strict=True):
        _no_traceback(res)
        if fifo_name == "run.json":
            # ls lists the other run and names the broken one; show/diff of it is one line, exit 2
            assert res.returncode == (0 if args[1] == "ls" else 2), (fifo_name, args, res.stderr[-2000:])
            assert "not a regular file (a FIFO)" in res.stderr, (fifo_name, args, res.stderr[-2000:])
        else:
            assert res.returncode == 0, (fifo_name, args, res.stderr[-2000:])


# --- many distinct keys ---------------------------------------------------------------------------------
# `data stats` printed one table row per distinct key: 100,000 keys did not finish in 90 s. The table lists
# the most frequent (MAX_KEYS), says how many more, and --json carries the full count.
@pytest.mark.parametrize("distinct", [150, 100_000])
def test_data_stats_lists_the_top_keys_and_counts_the_rest(tmp_path: Path, distinct: int) -> None:
    from expkit.data.profile import MAX_KEYS

    per_record = 10
    data = tmp_path / "wide.jsonl"
    with data.open("w") as fh:
        for r in range(distinct // per_record):
            fh.write(json.dumps({"text": "hi", **{f"k{r * per_record + j}": j for j in range(per_record)}}) + "\n")
    human, as_json = _expkit_all(["data", "stats", data], ["data", "stats", data, "--json"])
    _no_traceback(human)
    assert human.returncode == 0, human.stderr[-2000:]
    more = distinct + 1 - MAX_KEYS
    assert f"and {more:,} more keys ({distinct + 1:,} distinct in all" in human.stdout, human.stdout[-2000:]
    result = json.loads(as_json.stdout)["result"]
    assert result["key_count"] == distinct + 1
    assert len(result["keys"]) == MAX_KEYS
    assert result["keys"][0] == {
        "name": "text",
        "count": distinct // per_record,
        "types": {"string": distinct // per_record},
    }


# --- deep nesting ---------------------------------------------------------------------------------------
# Documents nested past what a recursive reader takes: a RecursionError traceback (exit 3) before. Each is
# read or refused with one line (exit 2) naming the file and its depth. Depths straddle orjson's 1024 and
# Python's 1000-frame limit.
DEPTHS = (900, 1100, 5000)
ALLOF_DEPTHS = (60, 100, 500)  # JSON depth 2d+1: 121 is read, 201 and 1001 are refused (limit 128)
DATE = "2026-01-01T00-00-00"


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _lmeval_dir(root: Path, model: str, filters: tuple[str, ...] = ("none",), extra: str = "{}") -> Path:
    d = root / model
    d.mkdir(parents=True)
    rows = [
        {"doc_id": i, "filter": f, "metrics": ["acc"], "acc": float(i % 2), "doc": {}, "target": "x"}
        for i in range(6)
        for f in filters
    ]
    (d / f"samples_boolq_{DATE}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    head = {"results": {"boolq": {"acc,none": 0.5}}, "model_name": model, "config": {"model": "hf"}}
    (d / f"results_{DATE}.json").write_text(json.dumps(head)[:-1] + f', "extra": {extra}}}')
    return d


def _trace(events: list[dict[str, object]], extra: str = "[]") -> str:
    return json.dumps({"traceEvents": events})[:-1] + f', "extra": {extra}}}'


_OP = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1}


@pytest.mark.slow  # 12 expkit processes: ~50 s on 2 loaded cores
def test_deep_documents_are_read_or_refused_in_one_line(tmp_path: Path) -> None:
    argvs, expect = [], []
    for depth in DEPTHS:
        base = tmp_path / f"d{depth}"
        a = _lmeval_dir(base, "a", extra=_nested(depth))
        b = _lmeval_dir(base, "b")
        argvs.append(["stats", "table", "--from", "lm-eval", a, b])
        expect.append((f"results_{DATE}.json", depth, depth > 1000))
        log = base / "deep.json"
        log.write_text('{"version": 2, "status": "success", "eval": {"task": "t", "model": "m", "x": ')
        with log.open("a") as fh:
            fh.write(_nested(depth) + '}, "results": {}}')
        argvs.append(["stats", "table", "--from", "inspect", log, log])
        expect.append(("deep.json", depth, depth > 1000))
        trace = base / "trace.json"
        trace.write_text(_trace([{**_OP, "ts": 0, "dur": 5}], extra=_nested(depth)))
        argvs.append(["profile", trace])
        expect.append(("trace.json", depth, depth > 1000))
    for d in ALLOF_DEPTHS:
        schema = tmp_path / f"allof{d}.json"
        schema.write_text('{"allOf": [' * d + '{"type": "object"}' + "]}" * d)
        (tmp_path / "one.jsonl").write_text('{"a": 1}\n')
        argvs.append(["data", "validate", tmp_path / "one.jsonl", "--schema", schema])
        expect.append((schema.name, 2 * d + 1, 2 * d + 1 > 128))
    for (name, depth, refused), res in zip(expect, _expkit_all(*argvs), strict=True):
        _no_traceback(res)
        if not refused:  # read: whatever the reader then says of the file (exit 0, 1 or 2), never exit 3
            assert res.returncode in (0, 1, 2) and "levels deep" not in res.stderr, (name, depth, res.stderr[-2000:])
            continue
        assert res.returncode == 2, (name, depth, res.stdout[-1000:], res.stderr[-2000:])
        said = re.search(r"nested ([\d,]+) levels deep", res.stderr)  # the depth of the whole file: the wrapping too
        assert name in res.stderr and said is not None, (name, depth, res.stderr[-2000:])
        assert depth <= int(said.group(1).replace(",", "")) <= depth + 2, (name, depth, res.stderr[-2000:])


# --- escapes and silent answers -------------------------------------------------------------------------
# Each of these was accepted with exit 0 and a confident answer.
BAD_GROUPS = ("/abs", "..", "../up", "a/b")
BAD_DURATIONS = (-5, float("nan"), float("inf"))


@pytest.mark.slow  # 9 expkit processes: ~40 s on 2 loaded cores
def test_escapes_and_silent_answers_are_exit_2(tmp_path: Path) -> None:
    argvs, expect = [], []
    for g in BAD_GROUPS:  # a group names groups/<group>.json: refused like a run name
        argvs.append(["runs", "exec", "--store", tmp_path / "store", "--group", g, "--", sys.executable, "-c", "0"])
        expect.append(("group name", g))
    for filt in ("strict_match", "nonee"):  # a typo of a logged filter; each task logs only "none"
        root = tmp_path / f"lm-{filt}"
        argvs.append(["stats", "table", "--from", "lm-eval", _lmeval_dir(root, "a"), _lmeval_dir(root, "b")])
        argvs[-1] += ["--filter", filt]
        expect.append(("filters present: none", filt))
    for i, dur in enumerate(BAD_DURATIONS):  # one corrupt event among sound ones
        trace = tmp_path / f"trace{i}.json"
        events = [{**_OP, "ts": 10 * k, "dur": 4} for k in range(5)] + [{**_OP, "ts": 60, "dur": dur}]
        trace.write_text(json.dumps({"traceEvents": events}))  # NaN/Infinity as Python's json writes them
        argvs.append(["profile", trace])
        expect.append(("invalid trace", dur))
    for (said, value), res in zip(expect, _expkit_all(*argvs), strict=True):
        _no_traceback(res)
        assert res.returncode == 2, (said, value, res.stdout[-1000:], res.stderr[-2000:])
        assert said in res.stderr, (said, value, res.stderr[-2000:])
    assert not (tmp_path / "tmp").exists() and not any(tmp_path.glob("store/*/groups"))


def _fifo_inputs(tmp_path: Path, role: str) -> list[str | Path]:
    """The command whose input of the ``role`` is a FIFO with no writer."""
    base = tmp_path / role
    base.mkdir()
    fifo = base / "fifo.json"
    if role in ("lm-eval results", "lm-eval samples"):
        a, b = _lmeval_dir(base, "a"), _lmeval_dir(base, "b")
        target = a / (f"results_{DATE}.json" if role == "lm-eval results" else f"samples_boolq_{DATE}.jsonl")
        target.unlink()
        os.mkfifo(target)
        return ["stats", "table", "--from", "lm-eval", a, b]
    os.mkfifo(fifo)
    one = base / "one.jsonl"
    one.write_text('{"a": 1}\n')
    return {
        "inspect log": ["stats", "table", "--from", "inspect", fifo, fifo],
        "inspect log dir": ["stats", "table", "--from", "inspect", base, base],
        "trace": ["profile", fifo],
        "schema": ["data", "validate", one, "--schema", fifo],
    }[role]


FIFO_ROLES = ("lm-eval results", "lm-eval samples", "inspect log", "inspect log dir", "trace", "schema")


@pytest.mark.slow  # six expkit processes: ~25 s on 2 loaded cores
def test_fifos_given_as_input_files_never_block(tmp_path: Path) -> None:
    argvs = [_fifo_inputs(tmp_path, role) for role in FIFO_ROLES]
    for role, res in zip(FIFO_ROLES, _expkit_all(*argvs), strict=True):
        _no_traceback(res)
        assert res.returncode == 2, (role, res.stdout[-1000:], res.stderr[-2000:])
        assert res.stderr.count("\n") <= 2, (role, res.stderr[-2000:])  # one line (and a note at most)

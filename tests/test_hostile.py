"""Hostile inputs of issue 36, run as real processes (``python -m expkit``): hangs and deep nesting.

Each family is generated from parameters (quantifier shapes, fork depths, nesting depths), not listed case
by case. A hang shows as a TimeoutExpired after a generous limit (load-proof: nothing here races a clock);
the process is killed and the test fails naming the command.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
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

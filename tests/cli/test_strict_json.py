"""Strict JSON for any text (issue 35 item 5): every ``--json`` envelope, and the JSONL of ``data head``,
parses with a strict parser (``json.loads(strict=True)`` and orjson) whatever the strings hold: control
characters (U+007F went through the terminal sanitizer as ``\\x7f``, an invalid escape), C1 codes, lone
surrogates (replaced by U+FFFD, see ``expkit.render.jsonout``), line separators.

Generated: hypothesis draws the text (derandomized, the same cases on every run), mixed with the characters
that broke JSON before; the envelope itself is driven directly, and each command whose result carries the
user's text (``data head``/``sample``, ``why``, ``stats table`` model and item names, any error naming a path)
runs in-process with it. A few cases run as real processes, where stdout is a pipe.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from expkit.render.jsonout import dumps, envelope, error_envelope

HOSTILE = ["\x7f", "\x1b]0;t\x07", "\x9b31m", "\x00", "\ud800", "\udcff", "\u2028", "\x85", "\ufeff", '"\\', "😀"]
# any code point, surrogates included, with the ones that broke JSON drawn often
CHARS = st.one_of(st.characters(exclude_categories=()), st.sampled_from(HOSTILE))
TEXT = st.lists(CHARS, max_size=30).map("".join)
NO_SURROGATE_TEXT = st.lists(st.one_of(st.characters(), st.sampled_from(HOSTILE[:4] + HOSTILE[6:])), max_size=30).map(
    "".join
)
CASES = settings(
    max_examples=25,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _readable(text: str) -> str:
    """What a strict reader gets back for ``text``: lone surrogates are U+FFFD."""
    return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


def _strict(out: str) -> dict:
    """``out`` parses with both strict parsers (orjson reads integers past 64 bits as floats, so its value
    is not compared); no raw DEL/C1 reaches a terminal."""
    parsed = json.loads(out, strict=True)
    orjson.loads(out.encode("utf-8"))
    assert not any(0x7F <= ord(c) <= 0x9F for c in out), "DEL/C1 written raw"
    return parsed


@dataclasses.dataclass(frozen=True)
class _Row:
    name: str
    tags: tuple[str, ...]
    score: float


@CASES
@given(key=TEXT, value=TEXT, names=st.lists(TEXT, max_size=3), big=st.integers(min_value=2**64, max_value=2**80))
def test_the_envelope_is_strict_json_for_any_text(key: str, value: str, names: list[str], big: int) -> None:
    result = {key: value, "rows": [_Row(n, (n, value), float("nan")) for n in names], "big": big}
    parsed = _strict(envelope("data head", result))["result"]
    assert parsed[_readable(key)] in (_readable(value), parsed["rows"])  # the key may repeat "rows"/"big"
    assert [r["name"] for r in parsed["rows"]] == [_readable(n) for n in names]
    assert all(r["score"] == "nan" for r in parsed["rows"]) and parsed["big"] == big
    err = _strict(error_envelope(f"c{key}", kind="InputError", message=value, where=key))["error"]
    assert err == {"kind": "InputError", "message": _readable(value), "where": _readable(key)}
    assert json.loads(dumps([value], indent=False), strict=True) == [_readable(value)]


@CASES
@given(texts=st.lists(NO_SURROGATE_TEXT, min_size=1, max_size=4), key=NO_SURROGATE_TEXT)
def test_data_head_and_sample_keep_any_text_as_strict_json(cli, tmp_path: Path, texts: list[str], key: str) -> None:
    records = [{"text": t, key or "k": i} for i, t in enumerate(texts)]
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    for cmd in (["data", "head", str(data)], ["data", "sample", str(data), "-n", "9", "--seed", "1"]):
        res = cli(*cmd, "--json")
        assert res.exit_code == 0, res.stderr
        got = [r["record"] for r in _strict(res.stdout)["result"]["records"]]
        assert got == records
    res = cli("data", "head", str(data))  # the plain output is JSONL: strict too, and terminal-safe
    assert res.exit_code == 0, res.stderr
    assert [_strict(line) for line in res.stdout.splitlines()] == records


@CASES
@given(message=TEXT, name=TEXT)
def test_why_keeps_any_exception_message_as_strict_json(cli, tmp_path: Path, message: str, name: str) -> None:
    log = tmp_path / "crash.log"
    text = (
        f'Traceback (most recent call last):\n  File "/home/u/{name}.py", line 3, in <module>\nValueError: {message}\n'
    )
    log.write_bytes(text.encode("utf-8", "surrogatepass"))  # lone surrogates as the invalid bytes they would be
    res = cli("why", str(log), "--json")
    assert res.exit_code in (0, 2), res.stderr
    _strict(res.stdout)


@CASES
@given(models=st.lists(NO_SURROGATE_TEXT, min_size=2, max_size=3, unique=True), item=NO_SURROGATE_TEXT)
def test_stats_table_keeps_any_model_and_item_name_as_strict_json(
    cli, tmp_path: Path, models: list[str], item: str
) -> None:
    rows = [{"model": m, "item": f"{item}{i}", "score": (i + j) % 2} for j, m in enumerate(models) for i in range(6)]
    data = tmp_path / "r.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = cli("stats", "table", str(data), "--json")
    assert res.exit_code in (0, 1, 2), res.stderr
    out = _strict(res.stdout)
    if res.exit_code == 0:
        assert {row["model"] for row in out["result"]["models"]} == set(models)


@CASES
@given(name=TEXT)
def test_an_error_naming_any_path_is_strict_json(cli, tmp_path: Path, name: str) -> None:
    res = cli("data", "stats", str(tmp_path / f"x{name}.jsonl"), "--json")
    assert res.exit_code == 2, res.stderr
    err = _strict(res.stdout)["error"]
    assert err["kind"] == "InputError" and "Traceback" not in res.stderr


# ---- real processes: stdout a pipe, as a script reads it ----------------------------------------------

EXPKIT = [sys.executable, "-m", "expkit"]


@pytest.mark.parametrize("text", ["smalllll\x7finte", "a\x9b31mb", "\x1b]0;title\x07", "line\u2028sep"])
def test_a_real_process_writes_strict_json_and_jsonl(tmp_path: Path, text: str) -> None:
    # issue 35: U+007F in generated text went through the terminal sanitizer into the JSON ("smalllll\x7finte")
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"text": text}) + "\n")
    for extra in (["--json"], []):
        res = subprocess.run([*EXPKIT, "data", "head", str(data), *extra], capture_output=True, timeout=120)
        assert res.returncode == 0, res.stderr[-2000:]
        out = _strict(res.stdout.decode("utf-8"))
        assert (out["result"]["records"][0]["record"] if extra else out) == {"text": text}
        assert b"\x1b" not in res.stdout and b"\x7f" not in res.stdout


def test_a_real_process_names_an_undecodable_path_in_strict_json(tmp_path: Path) -> None:
    # a file name with bytes that are not UTF-8 reaches Python as lone surrogates: orjson refused them (exit 3)
    path = bytes(tmp_path) + b"/\xff\x7f.jsonl"
    res = subprocess.run([*EXPKIT.copy(), "data", "stats", path, "--json"], capture_output=True, timeout=120)  # type: ignore[list-item]
    assert res.returncode == 2, res.stderr[-2000:]
    err = _strict(res.stdout.decode("utf-8"))["error"]
    assert "\ufffd\x7f.jsonl" in err["where"]
    assert b"Traceback" not in res.stderr and b"\\xff\\x7f.jsonl" in res.stderr  # the terminal shows the bytes

"""Damaged archives given to every command that reads a user's file (issue 36's hostile suite, round five): a
``.gz`` cut short, a ``.gz`` corrupt inside, a gzip bomb and a zip bomb. Before the fix a cut ``.gz`` was an
EOFError (exit 3) in ``why`` and ``mem --oom``, a corrupt one a ``zlib.error`` (exit 3) in every reader, and
``stats leaderboard``/``profile`` inflated a bomb whole (MemoryError). Each case is one line, exit 2.

The family is generated: readers x damages. The bombs are small here: the bounds that stop them are
patched down to 1 MiB for the test (the real ones are GiB), so each case is cheap.
"""

from __future__ import annotations

import gzip
import json
import re
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

_ROWS = "".join(json.dumps({"model": m, "item": i, "score": i % 2}) + "\n" for m in "ab" for i in range(200))
_BOUND = 2**20  # the patched bound; a bomb inflates to 4x it


def _cut(p: Path) -> Path:
    p = p.with_name(p.name + ".gz")
    p.write_bytes(gzip.compress(_ROWS.encode())[:40])
    return p


def _corrupt(p: Path) -> Path:
    p = p.with_name(p.name + ".gz")
    raw = bytearray(gzip.compress(_ROWS.encode() * 20))
    raw[30:60] = bytes(b ^ 0xFF for b in raw[30:60])
    p.write_bytes(bytes(raw))
    return p


def _gzip_bomb(p: Path) -> Path:
    p = p.with_name(p.name + ".gz")
    p.write_bytes(gzip.compress(b"[" + b"0" * (4 * _BOUND)))
    return p


def _zip_bomb(p: Path) -> Path:
    p = p.with_name(p.name + ".zip")
    with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("items.jsonl", b" " * (4 * _BOUND))
    return p


DAMAGES: dict[str, Callable[[Path], Path]] = {
    "cut": _cut,
    "corrupt": _corrupt,
    "gzip_bomb": _gzip_bomb,
    "zip_bomb": _zip_bomb,
}
READERS: dict[str, Callable[[str, Path], list[str]]] = {
    "data head": lambda f, w: ["data", "head", f],
    "data stats": lambda f, w: ["data", "stats", f],
    "data sample": lambda f, w: ["data", "sample", f, "-n", "2"],
    "data validate": lambda f, w: ["data", "validate", f],
    "why": lambda f, w: ["why", f],
    "mem --oom": lambda f, w: ["mem", "qwen2.5-0.5b", "--oom", f],
    "stats table": lambda f, w: ["stats", "table", f],
    "stats leaderboard": lambda f, w: ["stats", "leaderboard", f],
    "profile": lambda f, w: ["profile", f],
    "plot curves": lambda f, w: ["plot", "curves", f, "--out", str(w / "o.png")],
}

ZIP_READERS = ("stats table", "stats leaderboard")
_TRACEBACK = re.compile(r"^Traceback \(most recent call last\):$", re.MULTILINE)  # `why`'s hint quotes the header


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_damaged_archives_are_one_line_for_every_reader(damage: str, cli, tmp_path: Path, monkeypatch) -> None:
    from expkit.data import sources

    for name in ("MAX_LINE_BYTES", "MAX_DECOMPRESSED_BYTES", "MAX_WHOLE_BYTES"):
        monkeypatch.setattr(sources, name, _BOUND)
    wrong = []
    for reader, argv in READERS.items():
        if damage == "zip_bomb" and reader not in ZIP_READERS:  # the others read a .zip as bytes, never inflate
            continue
        where = tmp_path / reader.replace(" ", "_").replace("-", "")
        where.mkdir()
        path = DAMAGES[damage](where / ("trace.json" if reader == "profile" else "items.jsonl"))
        for json_flag in ([], ["--json"]):
            res = cli(*argv(str(path), where), *json_flag)
            if res.exit_code != 2 or res.exception is not None or _TRACEBACK.search(res.stderr):
                wrong.append(f"{reader} {' '.join(json_flag)}: exit {res.exit_code}, {res.exception!r}")
            elif json_flag:
                assert json.loads(res.stdout)["error"]["kind"] in ("InputError", "UsageError"), res.stdout
            else:
                assert str(path) in res.stderr and len(res.stderr.strip().splitlines()) <= 2, res.stderr
    assert not wrong, "\n".join(wrong)

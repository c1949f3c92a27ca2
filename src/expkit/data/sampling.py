"""``expkit data head|sample``: the first N records, or a uniform sample of N in one pass and O(N) memory.
Records come back as they are in the file: integers of any size stay exact (``exact_ints``)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from expkit.data.jsonl import JsonlSummary, JsonlTally, OnError, iter_jsonl
from expkit.errors import UsageError

__all__ = ["NumberedRecord", "RecordSample", "head_records", "sample_records"]


@dataclass(frozen=True)
class NumberedRecord:
    """A record and the line it came from (1-based)."""

    line: int
    record: Any


@dataclass(frozen=True)
class RecordSample:
    """Records picked from a file; ``seen`` is how many records were read to pick them, ``read`` what
    the pass saw (skipped lines included)."""

    path: str
    method: str
    seed: int | None
    seen: int
    records: tuple[NumberedRecord, ...]
    read: JsonlSummary


def _check_n(n: int) -> None:
    if n < 0:
        raise UsageError(f"-n {n} is negative")


def head_records(path: str | Path, *, n: int = 5, on_error: OnError = "raise") -> RecordSample:
    """The first ``n`` records; stops reading after them."""
    _check_n(n)
    tally = JsonlTally()
    out: list[NumberedRecord] = []
    if n:
        for rec in iter_jsonl(path, on_error=on_error, tally=tally, exact_ints=True):
            out.append(NumberedRecord(tally.lines, rec))
            if len(out) == n:
                break
    return RecordSample(
        path=tally.path or str(path), method="head", seed=None, seen=len(out), records=tuple(out), read=tally.summary()
    )


def sample_records(path: str | Path, *, n: int = 5, seed: int = 0, on_error: OnError = "raise") -> RecordSample:
    """A uniform random sample of ``n`` records without replacement (reservoir sampling, Vitter's
    Algorithm R), returned in file order. Same seed and file, same sample."""
    _check_n(n)
    rng = random.Random(seed)
    tally = JsonlTally()
    reservoir: list[NumberedRecord] = []
    seen = 0
    for rec in iter_jsonl(path, on_error=on_error, tally=tally, exact_ints=True):
        seen += 1
        if len(reservoir) < n:
            reservoir.append(NumberedRecord(tally.lines, rec))
        else:
            j = rng.randrange(seen)
            if j < n:
                reservoir[j] = NumberedRecord(tally.lines, rec)
    reservoir.sort(key=lambda r: r.line)
    return RecordSample(
        path=tally.path, method="reservoir", seed=seed, seen=seen, records=tuple(reservoir), read=tally.summary()
    )

"""``expkit data stats``: one streaming pass over a JSONL file: record count, keys and their JSON types,
and length percentiles of a text field (characters, and tokens with a local tokenizer), in constant memory."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from expkit.data.jsonl import JsonlSummary, JsonlTally, OnError, iter_jsonl
from expkit.errors import InputError, MissingDependency, UsageError

__all__ = ["DatasetProfile", "KeyStats", "LengthStats", "json_type", "profile_jsonl", "text_of"]

TEXT_FIELDS = (
    "messages",
    "text",
    "prompt",
    "completion",
    "instruction",
    "output",
    "question",
    "answer",
    "content",
    "conversations",
)
PERCENTILES = (50, 90, 99)
_TOKEN_BATCH = 256
PROGRESS_EVERY_MASK = (1 << 16) - 1  # report progress every 65,536 lines


def _report_progress(tally: JsonlTally, on_progress: Callable[[int, int], None]) -> None:
    done = tally.bytes_read()
    if done is not None and tally.total_bytes:
        on_progress(done, tally.total_bytes)


@dataclass(frozen=True)
class KeyStats:
    """A top-level key: in how many records it appears and with which JSON types (``type -> count``)."""

    name: str
    count: int
    types: dict[str, int]


@dataclass(frozen=True)
class LengthStats:
    """Length distribution of one field. Percentiles are exact when ``exact``; beyond ``reservoir_size``
    records they come from a uniform reservoir sample of that size (Vitter's Algorithm R)."""

    unit: str
    count: int
    mean: float
    min: int
    max: int
    percentiles: dict[str, float]
    exact: bool


MAX_KEYS = 100
"""How many top-level keys ``profile_jsonl`` lists by default: the most frequent (a file with 100,000 distinct
keys printed a table of 100,000 rows, for minutes); ``key_count`` counts them all."""


@dataclass(frozen=True)
class DatasetProfile:
    """The result of ``profile_jsonl``. ``keys`` lists the ``max_keys`` most frequent top-level keys (ties
    in the order first seen); ``key_count`` is the number of distinct keys, listed or not."""

    read: JsonlSummary
    non_object_records: int
    keys: tuple[KeyStats, ...]
    field: str | None
    field_present: int
    chars: LengthStats | None
    tokens: LengthStats | None
    tokens_reason: str | None
    key_count: int = 0

    @property
    def keys_not_listed(self) -> int:
        """Distinct keys left out of ``keys`` (beyond ``max_keys``)."""
        return self.key_count - len(self.keys)


def _top_keys(keys: dict[str, Counter[str]], max_keys: int | None) -> tuple[KeyStats, ...]:
    """The ``max_keys`` most frequent keys (all when None), most frequent first, ties in first-seen order."""
    import heapq

    counted = ((sum(c.values()), -i, k) for i, (k, c) in enumerate(keys.items()))
    top = heapq.nlargest(max_keys, counted) if max_keys is not None else sorted(counted, reverse=True)
    return tuple(KeyStats(name=k, count=n, types=dict(keys[k].most_common())) for n, _, k in top)


def json_type(value: Any) -> str:
    """The JSON type name of a parsed value: object, array, string, integer, number, boolean, null."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "null" if value is None else type(value).__name__


def text_of(value: Any) -> str | None:
    """The text in a field: a string as is; chat messages (a list of ``{"role", "content"}``) joined by
    newlines; content parts (``{"type": "text", "text": ...}``) joined. None when there is no text."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("content", "text", "value"):
            if key in value:
                return text_of(value[key])
        return None
    if isinstance(value, list):
        parts = [t for t in (text_of(v) for v in value) if t is not None]
        return "\n".join(parts) if parts else None
    return None


class _Lengths:
    """Running count/sum/min/max and a fixed-size reservoir sample of lengths."""

    def __init__(self, reservoir_size: int, seed: int) -> None:
        self.n = 0
        self.total = 0
        self.min: int | None = None
        self.max: int | None = None
        self.sample: list[int] = []
        self.size = reservoir_size
        self.rng = random.Random(seed)

    def add(self, x: int) -> None:
        self.n += 1
        self.total += x
        self.min = x if self.min is None or x < self.min else self.min
        self.max = x if self.max is None or x > self.max else self.max
        if len(self.sample) < self.size:
            self.sample.append(x)
        else:
            j = self.rng.randrange(self.n)
            if j < self.size:
                self.sample[j] = x

    def stats(self, unit: str) -> LengthStats | None:
        if self.n == 0:
            return None
        import numpy as np

        qs = np.percentile(np.asarray(self.sample, dtype=np.float64), PERCENTILES)
        return LengthStats(
            unit=unit,
            count=self.n,
            mean=self.total / self.n,
            min=int(self.min or 0),
            max=int(self.max or 0),
            percentiles={f"p{p}": float(q) for p, q in zip(PERCENTILES, qs, strict=True)},
            exact=self.n <= self.size,
        )


def _load_tokenizer(tokenizer_dir: Path) -> Any:
    """A ``tokenizers.Tokenizer`` from ``tokenizer.json`` in a local directory (or the file itself)."""
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise MissingDependency("counting tokens needs the tokenizers package", hint="pip install tokenizers") from exc
    path = tokenizer_dir / "tokenizer.json" if tokenizer_dir.is_dir() else tokenizer_dir
    if not path.exists():
        raise InputError(
            "no tokenizer.json here",
            path=tokenizer_dir,
            hint="give a local tokenizer directory (one saved with save_pretrained)",
        )
    return Tokenizer.from_file(str(path))


def _choose_field(first: dict[str, Any]) -> str | None:
    return next((k for k in TEXT_FIELDS if k in first), None)


def profile_jsonl(
    path: str | Path,
    *,
    field: str | None = None,
    tokenizer_dir: str | Path | None = None,
    on_error: OnError = "raise",
    reservoir_size: int = 100_000,
    seed: int = 0,
    on_progress: Callable[[int, int], None] | None = None,
    max_keys: int | None = MAX_KEYS,
) -> DatasetProfile:
    """Profile a JSONL file in one pass and constant memory.

    Args:
        path: ``.jsonl``, ``.jsonl.gz`` or ``-``.
        field: the text field to measure; None picks the first of ``TEXT_FIELDS`` present in the first
            record.
        tokenizer_dir: a local tokenizer (directory holding ``tokenizer.json``); token lengths count the
            field's text without a chat template.
        on_error: as in ``iter_jsonl``; with ``skip`` the skipped lines are in ``read``.
        reservoir_size: percentiles are exact up to this many records, sampled beyond.
        seed: seeds the reservoir sample.
        on_progress: called as ``(bytes_read, total_bytes)`` every 65,536 records of a plain file.
        max_keys: list at most this many keys, the most frequent (None: all); every key is counted.

    Returns:
        A DatasetProfile.

    Raises:
        InputError: an invalid line (with ``on_error="raise"``), a missing file or tokenizer.
        UsageError: a negative ``max_keys``.
    """
    if max_keys is not None and max_keys < 0:
        raise UsageError(f"max_keys {max_keys} is negative", hint="give 0 or more (None lists every key)")
    tok = _load_tokenizer(Path(tokenizer_dir)) if tokenizer_dir is not None else None
    tally = JsonlTally()
    keys: dict[str, Counter[str]] = {}
    non_object = 0
    present = 0
    chars = _Lengths(reservoir_size, seed)
    tokens = _Lengths(reservoir_size, seed + 1)
    pending: list[str] = []
    chosen = field

    def flush(texts: Iterable[str]) -> None:
        assert tok is not None  # flush runs only when a tokenizer was loaded
        for enc in tok.encode_batch(list(texts), add_special_tokens=False):
            tokens.add(len(enc.ids))

    for rec in iter_jsonl(path, on_error=on_error, tally=tally):
        if on_progress is not None and not tally.lines & PROGRESS_EVERY_MASK:
            _report_progress(tally, on_progress)
        if not isinstance(rec, dict):
            non_object += 1
            continue
        for k, v in rec.items():
            keys.setdefault(k, Counter())[json_type(v)] += 1
        if chosen is None:
            chosen = _choose_field(rec)
        if chosen is None or chosen not in rec:
            continue
        text = text_of(rec[chosen])
        if text is None:
            continue
        present += 1
        chars.add(len(text))
        if tok is not None:
            pending.append(text)
            if len(pending) >= _TOKEN_BATCH:
                flush(pending)
                pending.clear()
    if tok is not None and pending:
        flush(pending)
    if tok is None:
        reason = "no tokenizer given"
    elif present == 0:
        reason = "no text in the field"
    else:
        reason = None
    return DatasetProfile(
        read=tally.summary(),
        non_object_records=non_object,
        keys=_top_keys(keys, max_keys),
        key_count=len(keys),
        field=chosen,
        field_present=present,
        chars=chars.stats("characters"),
        tokens=tokens.stats("tokens") if tok is not None else None,
        tokens_reason=reason,
    )

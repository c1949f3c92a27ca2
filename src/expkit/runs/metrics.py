"""Metrics lines: what training prints (JSON objects with ``step``, Hugging Face Trainer's dict lines,
``[rankN]:`` prefixes from torchrun) read into one shape, and a run's ``metrics*.jsonl`` summarized into
its final metrics, per-rank finals and the first non-finite loss.

On disk a non-finite value is the string ``"nan"``, ``"inf"`` or ``"-inf"`` (JSON has no NaN; ``null``
would hide a diverged loss); :func:`metric_value` reads either form back as a float.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from expkit.runs.files import read_regular_bytes

__all__ = [
    "MetricsSummary",
    "is_divergence_metric",
    "iter_metric_records",
    "jsonable_metrics",
    "metric_value",
    "parse_metrics_line",
    "summarize_metrics",
]

# `torchrun --tee 3` prefixes each line with "[default<local rank>]:" (role "default"); with
# TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE="[rank${rank}]:" or "[${rank}]:" the global rank; PyTorch's own
# per-rank error lines read "[rankN]:".
_RANK_PREFIX = re.compile(rb"^\s*\[(?:rank|default)?(\d+)\]:\s?")
# A Trainer log line is a few hundred characters; anything this long is not one.
_MAX_LINE_CHARS = 20_000
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "infinity": math.inf, "-infinity": -math.inf}


def metric_value(value: Any) -> float | int | None:
    """A metric as a number: ints and floats as they are, numeric strings (``'2.31'``, ``'nan'``,
    ``'Infinity'``) parsed, anything else (bools, text, lists) None.

    Example:
        >>> metric_value("2.31"), metric_value("nan"), metric_value("adamw")
        (2.31, nan, None)
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str) and len(value) < 64:
        text = value.strip().lower()
        if text in _NON_FINITE:
            return _NON_FINITE[text]
        try:
            return float(text)
        except ValueError:
            return None
    return None


def is_divergence_metric(name: str) -> bool:
    """A metric whose NaN/inf value means training diverged: a loss or a gradient norm."""
    low = name.lower()
    return "loss" in low or low.endswith("grad_norm") or low == "gradient_norm"


def jsonable_metrics(rec: dict[str, Any]) -> dict[str, Any]:
    """``rec`` with non-finite floats as strings (``"nan"``), ready for ``metrics.jsonl``."""
    return {k: (str(v) if type(v) is float and not math.isfinite(v) else v) for k, v in rec.items()}


class _NotLiteral(ValueError):
    pass


def _literal(node: ast.AST) -> Any:
    """``ast.literal_eval`` that also reads the bare ``nan``/``inf`` a Python dict repr prints."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in ("nan", "inf"):
        return _NON_FINITE[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _literal(node.operand)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]
    raise _NotLiteral(type(node).__name__)


def _python_dict(text: str) -> dict[str, Any] | None:
    try:
        tree = ast.parse(text, mode="eval")
        obj = _literal(tree.body)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return obj if isinstance(obj, dict) else None


class MetricsLine(NamedTuple):
    """One printed metrics line: its numeric ``values``, the ``rank`` that printed it (None: unknown) and
    its ``kind`` (``json`` or ``trainer``)."""

    values: dict[str, Any]
    rank: int | None
    kind: str


def parse_metrics_line(line: bytes) -> MetricsLine | None:
    """One printed line as a MetricsLine ``(values, rank, kind)``, or None when it is not a metrics line.

    Read: a JSON object with an integer ``step`` (``kind="json"``; NaN/Infinity tokens and ``"nan"``
    strings kept as floats), or a Python dict repr of numbers as Hugging Face Trainer prints it
    (``{'loss': '2.31', 'epoch': 0.5}``: ``kind="trainer"``, values may be strings in transformers 5;
    the step is absent unless the dict has one). A ``[rankN]:`` prefix or a ``"rank"`` key gives the rank.
    Non-numeric values are dropped.

    Example:
        >>> parse_metrics_line(b"[rank1]: {'loss': '2.5', 'epoch': 0.5}")
        MetricsLine(values={'loss': 2.5, 'epoch': 0.5}, rank=1, kind='trainer')
    """
    rank = None
    m = _RANK_PREFIX.match(line)
    if m:
        rank = int(m.group(1))
        line = line[m.end() :]
    text = line.strip()
    if not text.startswith(b"{") or not text.endswith(b"}") or len(text) > _MAX_LINE_CHARS:
        return None
    obj: Any = None
    kind = "json"
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        try:
            obj = json.loads(text)  # the stdlib reads NaN / Infinity / -Infinity
        except (ValueError, RecursionError):
            obj = _python_dict(text.decode("utf-8", errors="replace"))
            kind = "trainer"
    if not isinstance(obj, dict):
        return None
    if kind == "json" and type(obj.get("step")) is not int:
        return None
    if type(obj.get("rank")) is int and rank is None:
        rank = obj["rank"]
    out: dict[str, Any] = {}
    if type(obj.get("step")) is int:
        out["step"] = obj["step"]
    for k, v in obj.items():
        if k in ("step", "rank", "time") or not isinstance(k, str):
            continue
        num = metric_value(v)
        if num is not None:
            out[k] = num
    if kind == "trainer" and len(out) == ("step" in out):
        return None  # a dict of text, not metrics
    return MetricsLine(out, rank, kind)


@dataclass(frozen=True)
class MetricsSummary:
    """A run's metrics files summarized: rank 0's last value of each metric (``final``), the other
    ranks' (``by_rank``, keyed by rank as text), the first non-finite loss or grad norm
    (``diverged_at``: ``"step 12: loss=nan"``, rank named when not 0) and the number of lines read."""

    final: dict[str, Any]
    by_rank: dict[str, dict[str, Any]]
    diverged_at: str | None
    lines: int


def iter_metric_records(run_dir: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Yield (file, record) for every JSON object line of ``metrics.jsonl`` and the other ranks' files;
    an unreadable file or a line that is not a JSON object (a torn last line) is passed over."""
    for path in sorted(run_dir.glob("metrics*.jsonl")):
        try:
            raw = read_regular_bytes(path)
        except OSError:  # a FIFO or device too (NotRegularFileError): reading it could block for ever
            continue
        for line in raw.splitlines():
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(rec, dict):
                yield path, rec


def _rank_of_file(path: Path) -> int:
    m = re.search(r"\.rank(\d+)$", path.stem)
    return int(m.group(1)) if m else 0


def summarize_metrics(run_dir: Path) -> MetricsSummary:
    """Read ``metrics.jsonl`` and ``metrics.rank<R>.jsonl`` of ``run_dir`` (a torn last line is skipped).

    Lines carrying a ``rank`` go to that rank; rank 0 owns ``final``. Values stay as written (a
    ``"nan"`` string stays ``"nan"``, so JSON output shows it).
    """
    finals: dict[int, dict[str, Any]] = {}
    diverged: tuple[float, str] | None = None
    n = 0
    for path, rec in iter_metric_records(run_dir):
        file_rank = _rank_of_file(path)
        n += 1
        rank = rec.pop("rank", file_rank)
        rank = rank if type(rank) is int else file_rank
        rec.pop("time", None)
        finals.setdefault(rank, {}).update(rec)
        for k, v in rec.items():
            if k == "step" or not is_divergence_metric(k):
                continue
            num = metric_value(v)
            if num is not None and not math.isfinite(num):
                step = rec.get("step")
                t = float(step) if type(step) is int else math.inf
                where = f"step {rec.get('step')}: {k}={v}" + (f" (rank {rank})" if rank else "")
                if diverged is None or t < diverged[0]:
                    diverged = (t, where)
    final = finals.pop(0, {})
    return MetricsSummary(
        final=final,
        by_rank={str(r): v for r, v in sorted(finals.items())},
        diverged_at=diverged[1] if diverged else None,
        lines=n,
    )

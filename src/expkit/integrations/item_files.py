"""Per-item output files, one model each: MMLU-Pro's published JSON lists (``question_id``, ``answer``,
``pred``; ``pred`` null when no answer was parsed) and any JSON list or JSONL file read through a field
mapping (item, then a score or a prediction and an answer, and a cluster), plain or inside ``.gz``/``.zip``.

Entries that are not records (MMLU-Pro's DeepSeek-Coder-V2 file holds 43 plain strings) are counted as
``skipped``, never fatal and never silent. The ``mmlu-pro`` reader is registered for ``stats table --from``.
"""

from __future__ import annotations

import math
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from expkit.data import sources
from expkit.data.sources import read_whole_bytes
from expkit.errors import InputError, UsageError
from expkit.integrations.readers import EvalItems, EvalQuery

__all__ = [
    "MMLU_PRO_FIELDS",
    "FieldMap",
    "MmluProReader",
    "ModelOutputs",
    "field_map",
    "is_mmlu_pro",
    "load_entries",
    "model_name_of",
    "outputs_from_entries",
    "read_model_outputs",
]

_EXTENSIONS = (".gz", ".zip", ".json", ".jsonl", ".csv", ".tsv", ".eval")


@dataclass(frozen=True)
class FieldMap:
    """Which field of a record holds what: the item id, and either a ``score`` or a ``pred`` with the
    correct ``answer`` (score 1 when equal); ``cluster`` optional. A dotted name (``metrics.acc``) walks
    nested objects."""

    item: str
    score: str | None = None
    pred: str | None = None
    answer: str | None = None
    cluster: str | None = None


def field_map(
    *, item: str | None, score: str | None, pred: str | None, answer: str | None, cluster: str | None
) -> FieldMap | None:
    """The mapping ``--item/--score/--pred/--answer/--cluster`` give (None: no field named but a cluster).

    Raises:
        UsageError: a score/pred/answer without an item, both a score and a pred, a pred without an answer.
    """
    if item is None and score is None and pred is None and answer is None:
        return None
    if item is None:
        raise UsageError("--score, --pred and --answer need --item FIELD (the item id)", hint="e.g. --item id")
    if score is not None and (pred is not None or answer is not None):
        raise UsageError("give --score FIELD, or --pred FIELD with --answer FIELD, not both")
    if score is None and (pred is None or answer is None):
        raise UsageError("--item needs --score FIELD, or --pred FIELD with --answer FIELD")
    return FieldMap(item=item, score=score, pred=pred, answer=answer, cluster=cluster)


MMLU_PRO_FIELDS = FieldMap(item="question_id", pred="pred", answer="answer")
"""MMLU-Pro's eval_results records (TIGER-AI-Lab/MMLU-Pro, compute_accuracy.py reads the same fields)."""


@dataclass(frozen=True, eq=False)
class ModelOutputs:
    """One model's item scores: ``scores[i]`` for ``items[i]`` (NaN where unparsed), ``unparsed`` the
    items answered without a parsable answer, ``skipped`` the file's entries that are not records,
    ``answers`` the distinct correct answers seen (the options of a multiple-choice benchmark)."""

    path: str
    items: tuple[str, ...]
    scores: np.ndarray
    unparsed: np.ndarray
    clusters: tuple[str, ...] | None
    skipped: int
    answers: frozenset[str] = frozenset()


def model_name_of(path: str | Path) -> str:
    """The file name without its extensions (``.json.gz`` off, a version's ``1.5`` kept).

    Example:
        >>> model_name_of("out/model_outputs_Qwen1.5-72B-Chat_5shots.json.gz")
        'model_outputs_Qwen1.5-72B-Chat_5shots'
    """
    name = Path(path).name
    while name.lower().endswith(_EXTENSIONS):
        name = name[: name.rfind(".")]
    return name or Path(path).name


def _read_bytes(p: Path) -> bytes:
    hint = "pass one per-item output file per model"
    if not p.is_file():
        raise InputError("no such file", path=p, hint=hint)
    if p.suffix.lower() != ".zip":  # a .gz inflated through the bounded reader: cut, corrupt or a bomb is one line
        return read_whole_bytes(p, kind="per-item output file", hint=hint)
    try:
        with zipfile.ZipFile(p) as zf:
            members = [m for m in zf.namelist() if not m.endswith("/") and not m.startswith("__MACOSX")]
            if len(members) != 1:
                raise InputError(
                    f"the zip holds {len(members)} files ({', '.join(members[:5])}); one is expected", path=p
                )
            with zf.open(members[0]) as member:  # the header's size can lie: read at most the bound
                data = member.read(sources.MAX_WHOLE_BYTES + 1)
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as e:
        raise InputError(f"not a readable zip file ({e})", path=p) from None
    if len(data) > sources.MAX_WHOLE_BYTES:
        raise InputError(
            f"the zip's member inflates past {sources.MAX_WHOLE_BYTES / 2**20:,.0f} MiB", path=p, hint=hint
        )
    return data


def load_entries(path: str | Path) -> list[Any]:
    """The entries of a JSON list or a JSONL file (one value per line), ``.gz`` or ``.zip`` read directly.

    Raises:
        InputError: no such file, an empty file, invalid JSON (the line named), a JSON value that is not
            a list of entries.
    """
    import orjson

    p = Path(path)
    text = _read_bytes(p).lstrip(b"\xef\xbb\xbf").strip()
    if not text:
        raise InputError("the file is empty", path=p, hint="pass the model's per-item outputs")
    if text.startswith(b"["):
        try:
            doc = orjson.loads(text)
        except orjson.JSONDecodeError as e:
            raise InputError(f"invalid JSON ({e})", path=p) from None
        return list(doc)
    try:  # one JSON object (an Inspect .json log, a one-line JSONL file)
        return [orjson.loads(text)]
    except orjson.JSONDecodeError:
        pass
    entries = []
    for lineno, line in enumerate(text.split(b"\n"), 1):
        if line.strip():
            try:
                entries.append(orjson.loads(line))
            except orjson.JSONDecodeError as e:
                hint = "a JSON list of records, or one JSON record per line (JSONL)"
                raise InputError(f"invalid JSON ({e})", path=p, line=lineno, hint=hint) from None
    return entries


def is_mmlu_pro(entries: Sequence[Any]) -> bool:
    """Whether the first record has MMLU-Pro's ``question_id``, ``answer`` and ``pred``."""
    first = next((e for e in entries if isinstance(e, dict)), None)
    return first is not None and all(k in first for k in ("question_id", "answer", "pred"))


def _get(record: dict[str, Any], name: str) -> tuple[bool, Any]:
    """(found, value) of ``name``, walking a dotted name through nested objects when it is not a key."""
    if name in record:
        return True, record[name]
    value: Any = record
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return False, None
        value = value[part]
    return True, value


def _score_of(value: Any, p: Path, where: str) -> float:
    """A record's score as a float (NaN: null, the answer not parsed)."""
    if value is None or value == "":
        return math.nan
    if isinstance(value, bool):
        return float(value)
    try:
        score = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{where}: score {value!r} is not a number", path=p) from None
    if not math.isfinite(score):
        raise InputError(f"{where}: score {value!r} is not finite", path=p)
    return score


def outputs_from_entries(entries: Sequence[Any], fields: FieldMap, path: str | Path) -> ModelOutputs:
    """Score each record by ``fields``; entries that are not records are counted in ``skipped``.

    Raises:
        InputError: no records, a mapped field missing from a record (its position named), an item
            seen twice, a score that is not a number.
    """
    p = Path(path)
    if (fields.score is None) == (fields.pred is None or fields.answer is None):
        raise InputError("map either a score field, or a pred and an answer field", path=p)
    wanted = [f for f in (fields.item, fields.score, fields.pred, fields.answer, fields.cluster) if f]
    items: list[str] = []
    scores: list[float] = []
    clusters: list[str] = []
    answers: set[str] = set()
    seen: dict[str, int] = {}
    skipped = 0
    for pos, rec in enumerate(entries, 1):
        if not isinstance(rec, dict):
            skipped += 1
            continue
        got = {f: _get(rec, f) for f in wanted}
        missing = [f for f, (ok, _) in got.items() if not ok]
        if missing:
            keys = ", ".join(list(rec)[:8])
            raise InputError(f"entry {pos}: field {missing[0]!r} is missing", path=p, hint=f"its fields: {keys}")
        item = str(got[fields.item][1])
        if item in seen:
            raise InputError(f"entry {pos}: item {item!r} appears twice (first at entry {seen[item]})", path=p)
        seen[item] = pos
        items.append(item)
        if fields.score is not None:
            scores.append(_score_of(got[fields.score][1], p, f"entry {pos}"))
        else:
            pred, answer = got[str(fields.pred)][1], str(got[str(fields.answer)][1]).strip()
            answers.add(answer)
            parsed = pred is not None and str(pred).strip() != ""
            scores.append(float(str(pred).strip() == answer) if parsed else math.nan)
        if fields.cluster:
            clusters.append(str(got[fields.cluster][1]))
    if not items:
        what = f"{skipped} entries, none a record" if skipped else "no entries"
        raise InputError(f"no records: {what}", path=p, hint="expected a JSON list or JSONL of per-item records")
    arr = np.array(scores, dtype=np.float64)
    cl = tuple(clusters) if fields.cluster else None
    return ModelOutputs(str(p), tuple(items), arr, np.isnan(arr), cl, skipped, frozenset(answers))


def read_model_outputs(path: str | Path, fields: FieldMap | None = None) -> ModelOutputs:
    """One model's outputs from ``path``: MMLU-Pro's format when ``fields`` is None, else mapped.

    Raises:
        InputError: what :func:`load_entries` and :func:`outputs_from_entries` raise; without ``fields``, a
            file that is not MMLU-Pro's format.
    """
    entries = load_entries(path)
    if fields is None:
        if not is_mmlu_pro(entries):
            raise InputError(
                "not MMLU-Pro's format (records with question_id, answer, pred)",
                path=path,
                hint="map the fields: --item FIELD and --score FIELD, or --pred FIELD --answer FIELD",
            )
        fields = MMLU_PRO_FIELDS
    return outputs_from_entries(entries, fields, path)


@dataclass(frozen=True)
class MmluProReader:
    """MMLU-Pro's published per-question outputs (``model_outputs_<model>_5shots.json``, ``.zip``, ``.gz``),
    one file per model; an unparsed answer scores 0 here (``stats leaderboard --unparsed`` chooses)."""

    name: str = "mmlu-pro"
    description: str = "mmlu-pro: MMLU-Pro's model_outputs_*.json(.gz/.zip) lists, one file per model"
    accepts: frozenset[str] = frozenset()
    selector: str | None = None

    def sniff(self, path: Path) -> bool:
        return path.is_file() and path.name.startswith("model_outputs_")

    def read(self, paths: Sequence[Path], query: EvalQuery) -> EvalItems:
        from expkit.stats.tables import ItemResults, TaskResults

        scores: dict[str, dict[str, float]] = {}
        notes = []
        for path in paths:
            out = read_model_outputs(path)
            name = model_name_of(path)
            scores[name] = {k: (0.0 if np.isnan(s) else float(s)) for k, s in zip(out.items, out.scores, strict=True)}
            notes.append(f"{name}: {int(out.unparsed.sum())} unparsed answers scored 0, {out.skipped} entries skipped")
        results = ItemResults(", ".join(map(str, paths)), tuple(scores), scores, None, sum(map(len, scores.values())))
        return EvalItems((TaskResults("", results, tuple(map(str, paths))),), tuple(notes), single_table=True)

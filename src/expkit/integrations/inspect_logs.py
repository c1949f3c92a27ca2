"""Inspect AI eval logs as per-item results, one table per task, epochs as clusters.

Inspect writes an ``EvalLog`` per (task, model): a ``.json`` file (``eval`` with ``task`` and ``model``,
``status``, ``samples``) or a ``.eval`` zip (``header.json`` with the same header, written at the end;
``_journal/start.json`` before it, or ``start.json`` in the first .eval logs; one
``samples/<id>_epoch_<n>.json`` per sample and epoch). A sample holds ``id``, ``epoch`` and ``scores``
(``{scorer: {"value": ...}}``; logs before v0.3.x had one ``score``). Values map to numbers as Inspect's
``value_to_float`` maps them: "C" 1, "P" 0.5, "I" and "N" 0, yes/true 1, no/false 0, numeric strings
and numbers as they are; where Inspect warns and counts an unknown value as 0, expkit refuses it. A NaN
value is ``Score.unscored()``, which Inspect's metrics skip: left out here too, and counted.

Inspect writes JSON with pydantic, which spells a NaN or infinite float ``NaN``/``Infinity`` (a NaN stderr
in ``results``, an unscored value); such files are read with the standard library's parser. Current
``.eval`` members are Zstandard-compressed (zip method 93): Python 3.14's zipfile reads them, and before
3.14 the ``zstandard`` package does if installed (inspect_ai itself depends on a zstd reader).
Reading needs no inspect_ai install: the files are plain JSON and zip.
"""

from __future__ import annotations

import json
import math
import struct
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from expkit.data.nesting import ORJSON_MAX_DEPTH, json_nesting_depth, too_deep
from expkit.errors import InputError, UsageError
from expkit.integrations.readers import EvalItems
from expkit.stats.tables import ItemResults, TaskResults

__all__ = ["InspectLog", "inspect_value_to_float", "read_inspect_log", "read_inspect_tasks"]

# inspect_ai.scorer._metric: CORRECT, INCORRECT, PARTIAL, NOANSWER and what value_to_float makes of them
_LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
_WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}


def inspect_value_to_float(value: Any) -> float | None:
    """A score value as Inspect's ``value_to_float()`` reads it; None where Inspect would warn and use 0.

    Example:
        >>> [inspect_value_to_float(v) for v in ("C", "I", "P", "N", "yes", "0.25", 3, True, "maybe")]
        [1.0, 0.0, 0.5, 0.0, 1.0, 0.25, 3.0, 1.0, None]
    """
    if isinstance(value, (bool, int, float)):
        return float(value)
    if isinstance(value, str):
        if value in _LETTERS:
            return _LETTERS[value]
        low = value.lower()
        if low in _WORDS:
            return _WORDS[low]
        try:
            x = float(low)
        except ValueError:
            return None
        return x if math.isfinite(x) else None
    return None


@dataclass(frozen=True)
class InspectLog:
    """One log: its task and model, status, and per (sample id, epoch) the score value of each scorer."""

    path: str
    task: str
    model: str
    status: str
    samples: tuple[tuple[str, int, dict[str, Any]], ...]  # (id, epoch, {scorer: value})
    n_unscored: int
    error: str | None = None  # the EvalLog's error.message when the eval failed (status "error")


def _loads(data: bytes, path: str, member: str | None = None) -> Any:
    """JSON as Inspect writes it: orjson first; pydantic's ``NaN``/``Infinity`` (which orjson refuses) via the
    standard library's parser, which reads them as floats."""
    where = f"{path}!{member}" if member else path
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(data)
    except RecursionError:  # past orjson's depth limit, the standard parser recurses per level
        raise too_deep(where, json_nesting_depth(data), ORJSON_MAX_DEPTH, what="the log is") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        msg, line, col = (
            (exc.msg, exc.lineno, exc.colno) if isinstance(exc, json.JSONDecodeError) else (str(exc), None, None)
        )
        raise InputError(f"not valid JSON: {msg}", path=where, line=line, column=col) from None


# A compression bomb inside an .eval (a member inflating to gigabytes) stops here with an InputError, not a
# MemoryError: 1 GiB for one member, ~1000x the largest sample with a long transcript.
MAX_MEMBER_BYTES = 2**30
# members of one .eval read as samples: 10 million, far past any eval set
MAX_SAMPLES = 10_000_000


def _too_big(name: str, size: int) -> str:
    return f"{name} inflates to more than {MAX_MEMBER_BYTES / 2**30:.0f} GiB ({size:,} bytes or more): not read"


_ZIP_ZSTD = 93  # zip compression method Zstandard: what Inspect writes .eval members with (inspect_ai #4553)


def _read_member(zf: zipfile.ZipFile, name: str, path: str) -> bytes:
    """One member's bytes; a Zstandard member on a Python whose zipfile lacks zstd (before 3.14) is
    decompressed with the ``zstandard`` package when installed."""
    info = zf.getinfo(name)
    if info.file_size > MAX_MEMBER_BYTES:
        raise InputError(_too_big(name, info.file_size), path=path, hint="an Inspect sample is kilobytes to megabytes")
    if info.compress_type != _ZIP_ZSTD or hasattr(zipfile, "ZIP_ZSTANDARD"):
        try:
            with zf.open(name) as member:  # read to the bound, whatever size the header claims
                data = member.read(MAX_MEMBER_BYTES + 1)
        except (NotImplementedError, RuntimeError) as exc:  # a method this zipfile cannot decompress
            raise InputError(f"cannot decompress {name}: {exc}", path=path) from None
        if len(data) > MAX_MEMBER_BYTES:
            raise InputError(_too_big(name, len(data)), path=path, hint="the archive is damaged or hostile")
        return data
    try:
        import zstandard
    except ImportError:
        raise InputError(
            f"{name} is Zstandard-compressed (zip method 93, Inspect's .eval default) and this "
            "Python's zipfile cannot read it",
            path=path,
            hint="pip install zstandard, or use Python 3.14+",
        ) from None
    fp = zf.fp
    assert fp is not None  # the zip is open
    fp.seek(info.header_offset)
    local = fp.read(30)  # the local file header: signature ... name length, extra length
    if local[:4] != b"PK\x03\x04":
        raise InputError(f"{name}: no local file header at offset {info.header_offset}", path=path)
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    fp.seek(info.header_offset + 30 + name_len + extra_len)
    try:
        data = zstandard.ZstdDecompressor().decompress(fp.read(info.compress_size), max_output_size=info.file_size)
    except zstandard.ZstdError as exc:
        raise InputError(f"cannot decompress {name}: {exc}", path=path) from None
    if zlib.crc32(data) != info.CRC:
        raise InputError(f"{name}: CRC check failed after Zstandard decompression", path=path)
    return data


def _iter_zip_samples(zf: zipfile.ZipFile, path: str) -> Iterator[dict[str, Any]]:
    names = [n for n in zf.namelist() if n.startswith("samples/") and n.endswith(".json")]
    if len(names) > MAX_SAMPLES:
        raise InputError(f"{len(names):,} sample members, more than {MAX_SAMPLES:,}: not read", path=path)
    for name in sorted(names):
        sample = _loads(_read_member(zf, name, path), path, name)
        if not isinstance(sample, dict):
            raise InputError("a sample is not a JSON object", path=f"{path}!{name}")
        yield sample


def _scores_of(sample: dict[str, Any]) -> dict[str, Any] | None:
    scores = sample.get("scores")
    if isinstance(scores, dict) and scores:
        return {str(k): (v.get("value") if isinstance(v, dict) else v) for k, v in scores.items()}
    single = sample.get("score")
    if isinstance(single, dict) and "value" in single:
        return {"score": single["value"]}
    return None


def read_inspect_log(path: str | Path) -> InspectLog:
    """Read a ``.eval`` (zip) or ``.json`` Inspect log.

    Raises:
        InputError: a missing file, a zip without ``header.json``/``_journal/start.json``, JSON that is
            not an EvalLog (no ``eval.task``/``eval.model``), a sample without an id.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("no such file", path=p, hint="pass Inspect .eval or .json logs (inspect eval --log-dir)")
    raw_samples: list[dict[str, Any]]
    if p.suffix == ".eval" or zipfile.is_zipfile(p):
        try:
            with zipfile.ZipFile(p) as zf:
                names = set(zf.namelist())
                head_name = next((n for n in ("header.json", "_journal/start.json", "start.json") if n in names), None)
                if head_name is None:
                    raise InputError(
                        "an .eval log without header.json",
                        path=p,
                        hint="the file is not an Inspect log, or the eval was cut before it started",
                    )
                header = _loads(_read_member(zf, head_name, str(p)), str(p), head_name)
                raw_samples = list(_iter_zip_samples(zf, str(p)))
        except zipfile.BadZipFile as exc:
            raise InputError(f"not a readable .eval (zip) log: {exc}", path=p) from None
    else:
        header = _loads(p.read_bytes(), str(p))
        raw_samples = (header.get("samples") or []) if isinstance(header, dict) else []
    ev = header.get("eval") if isinstance(header, dict) else None
    if not isinstance(ev, dict) or not ev.get("task") or not ev.get("model"):
        raise InputError("not an Inspect EvalLog (no eval.task and eval.model)", path=p)
    samples = []
    unscored = 0
    for i, s in enumerate(raw_samples):
        if not isinstance(s, dict) or s.get("id") is None:
            raise InputError(f"sample {i} has no id", path=p)
        scores = _scores_of(s)
        if scores is None:
            unscored += 1
            continue
        epoch = s.get("epoch") or 1
        if isinstance(epoch, bool) or not isinstance(epoch, int):
            raise InputError(f"sample {s['id']!r} has epoch {epoch!r}, not a whole number", path=p)
        samples.append((str(s["id"]), epoch, scores))
    failure = header.get("error")  # EvalLog.error: EvalError(message, traceback, traceback_ansi) or null
    message = failure.get("message") if isinstance(failure, dict) else None
    error = " ".join(str(message).split()) if message else ""  # one line: the terminal error line stays one
    return InspectLog(
        str(p),
        str(ev["task"]),
        str(ev["model"]),
        str(header.get("status", "unknown")),
        tuple(samples),
        unscored,
        error=error or None,
    )


def _pick(value: Any, key: str | None, where: str) -> Any:
    if key is None:
        if isinstance(value, dict):
            raise InputError(
                f"the score is a dict ({', '.join(map(str, value))}): name one key",
                path=where,
                hint="name the key as SCORER.KEY",
            )
        return value
    if not isinstance(value, dict) or key not in value:
        raise InputError(f"the score has no key {key!r}", path=where)
    return value[key]


def _expand_log_dirs(logs: Sequence[str | Path], notes: list[str]) -> list[Path]:
    """Files as given; a directory (``--log-dir``) becomes its ``.eval`` logs and the ``.json`` files that
    are EvalLogs (the viewer's ``logs.json`` index and other JSON are passed over, with a note)."""
    out: list[Path] = []
    for item in logs:
        p = Path(item)
        if not p.is_dir():
            out.append(p)
            continue
        found = sorted(f for f in p.rglob("*") if f.suffix in (".eval", ".json") and f.is_file())
        skipped, kept = 0, 0
        for f in found:
            if f.suffix == ".json":
                try:
                    head = _loads(f.read_bytes(), str(f))
                except (OSError, InputError):
                    head = None
                if not (isinstance(head, dict) and isinstance(head.get("eval"), dict)):
                    skipped += 1
                    continue
            out.append(f)
            kept += 1
        if not kept:  # this directory's own logs: another argument's logs do not count for it
            raise InputError(
                "holds no Inspect logs (.eval, or .json EvalLogs)",
                path=p,
                hint="pass the directory given to inspect eval --log-dir, or the log files",
            )
        if skipped:
            notes.append(f"{p}: {skipped} .json file(s) that are not EvalLogs passed over")
    return out


def read_inspect_tasks(
    logs: Sequence[str | Path],
    *,
    tasks: Sequence[str] | None = None,
    metric: str | None = None,
    min_models: int = 2,
) -> EvalItems:
    """Per-task, per-model item scores from Inspect logs, ready for ``build_task_tables``.

    An item is a (sample id, epoch); with more than one epoch the sample id is the cluster, so the
    intervals and the paired comparison use cluster-robust standard errors (repeats of one question
    are not independent items).

    Args:
        logs: ``.eval`` or ``.json`` logs, one per (task, model), or directories holding them.
        tasks: tasks to compare (default: all that every model has).
        metric: the scorer (``match``), or ``scorer.key`` for a dict-valued score (default: the first
            scorer of the first log).
        min_models: a task logged for fewer models is a UsageError (1: one labelled run of a comparison
            built by the caller).

    Raises:
        InputError: unreadable logs, two logs for one (task, model), a value Inspect cannot convert.
        UsageError: fewer than two models for a task, a --task or --metric that is absent.
    """
    notes: list[str] = []
    by_task = _one_log_per_task_and_model(logs, notes)
    models = list(dict.fromkeys(m for per in by_task.values() for m in per))
    if tasks:
        missing = [t for t in tasks if t not in by_task]
        if missing:
            raise UsageError(f"task {missing[0]!r} is in none of the logs", hint=f"tasks: {', '.join(by_task)}")
        chosen = list(dict.fromkeys(tasks))
    else:
        chosen = [t for t, per in by_task.items() if len(per) == len(models)]
        left = [t for t in by_task if t not in chosen]
        if left:
            notes.append(f"tasks not logged for every model, left out: {', '.join(left)}")
    out = [_task_results(task, by_task[task], metric, models, notes, min_models) for task in chosen]
    if not out:
        raise UsageError("no task has logs for every model", hint="pass one log per (task, model)")
    return EvalItems(tuple(out), tuple(notes))


def _one_log_per_task_and_model(logs: Sequence[str | Path], notes: list[str]) -> dict[str, dict[str, InspectLog]]:
    """task -> model -> its log; of an eval set's retries the successful log is kept (noted)."""
    by_task: dict[str, dict[str, InspectLog]] = {}
    groups: dict[tuple[str, str], list[InspectLog]] = {}
    for path in _expand_log_dirs(logs, notes):
        log = read_inspect_log(path)
        groups.setdefault((log.task, log.model), []).append(log)
    for (task_name, model_name), found in groups.items():
        log = found[0]
        if len(found) > 1:
            # an eval set's retry leaves the failed attempts' logs beside the successful one: keep the success
            ok = [g for g in found if g.status == "success"]
            if len(ok) != 1:
                raise InputError(
                    f"a second log for task {task_name!r} and model {model_name!r} (first: {found[0].path})",
                    path=found[1].path,
                    hint="pass one log per task and model",
                )
            log = ok[0]
            notes.append(
                f"task {task_name!r}, model {model_name!r}: used {log.path} (success), not "
                + ", ".join(f"{g.path} ({g.status})" for g in found if g is not log)
            )
        if not log.samples:
            raise _no_samples(log)
        by_task.setdefault(task_name, {})[model_name] = log
        if log.status != "success":
            why = f": {log.error}" if log.error else ""
            notes.append(f"{log.path}: status {log.status!r}{why} (read what it holds)")
        if log.n_unscored:
            notes.append(f"{log.path}: {log.n_unscored} samples without a score (errored?) left out")
    return by_task


def _no_samples(log: InspectLog) -> InputError:
    """Why a log holds no scored sample: the eval failed or was cancelled (said with Inspect's own error
    message), or it was written without samples (a header-only .json, ``--no-log-samples``)."""
    if log.status in ("error", "cancelled"):
        what = "failed" if log.status == "error" else "was cancelled"
        why = f": {log.error}" if log.error else ""
        return InputError(
            f"the eval {what} before any sample was scored (status {log.status!r}{why})",
            path=log.path,
            hint="fix the cause and run the eval again (inspect eval-retry LOG), then pass the new log",
        )
    return InputError(
        f"the log holds no scored samples ({log.n_unscored} without a score)",
        path=log.path,
        hint="per-item scores need the samples: pass the .eval log, or re-run with samples "
        "logged (not --no-log-samples)",
    )


def _task_results(
    task: str, per: dict[str, InspectLog], metric: str | None, models: list[str], notes: list[str], min_models: int
) -> TaskResults:
    """One task's item scores per model: an item is (sample id, epoch), the sample id its cluster."""
    if len(per) < min_models:
        raise UsageError(
            f"task {task!r} has a log for one model only ({', '.join(per)})",
            hint="pass one log per model for each task",
        )
    first = next(iter(per.values()))
    scorers = list(dict.fromkeys(k for _, _, sc in first.samples for k in sc))
    scorer, _, key = (metric or (scorers[0] if scorers else "")).partition(".")
    if metric is None and len(scorers) > 1:
        notes.append(
            f"{task}: scorer {scorer} (also scored: {', '.join(s for s in scorers if s != scorer)}; "
            "choose the metric to compare another)"
        )
    scores: dict[str, dict[str, float]] = {}
    clusters: dict[str, str] = {}
    epochs: set[int] = set()
    unscored = 0
    for model, log in per.items():
        items: dict[str, float] = {}
        for sid, epoch, sc in log.samples:
            x = _sample_score(task, log, sid, epoch, sc, scorer, key)
            if math.isnan(x):  # Score.unscored(): Inspect's metrics and reducers skip it
                unscored += 1
                continue
            item = f"{sid}#{epoch}"
            if item in items:
                raise InputError(f"sample {sid} epoch {epoch} appears twice", path=log.path)
            items[item] = x
            clusters[item] = sid
            epochs.add(epoch)
        scores[model] = items
    if unscored:
        notes.append(
            f"{task}: {unscored} (sample, epoch) scores are NaN (Score.unscored), left out as "
            "Inspect's metrics leave them out"
        )
    multi = len(epochs) > 1
    if multi:
        notes.append(f"{task}: {len(epochs)} epochs; the sample id is the cluster of its epochs")
    order = tuple(m for m in models if m in per)
    scores = {m: scores[m] for m in order}
    name = f"inspect {task} ({metric or scorer})"
    results = ItemResults(name, order, scores, clusters if multi else None, sum(map(len, scores.values())))
    return TaskResults(task, results, tuple(log.path for log in per.values()))


def _sample_score(task: str, log: InspectLog, sid: str, epoch: int, sc: dict[str, Any], scorer: str, key: str) -> float:
    """The float of one sample's ``scorer`` (``scorer.key`` for a dict score), as Inspect converts it."""
    where = f"{log.path} (sample {sid}, epoch {epoch})"
    if scorer not in sc:
        raise UsageError(f"task {task!r}: {where} has no scorer {scorer!r}", hint=f"scorers: {', '.join(sc)}")
    value = _pick(sc[scorer], key or None, where)
    x = inspect_value_to_float(value)
    if x is None:
        raise InputError(
            f"score value {value!r} of scorer {scorer!r} is not one Inspect converts "
            "(C, I, P, N, yes/no, true/false, a number)",
            path=where,
            hint="Inspect itself would count it as 0 with a warning; fix the scorer",
        )
    return x

"""Lab C1.1: a JSONL file read into a list multiplies memory; a generator pipeline stays flat.

Each load runs in a fresh interpreter (``expkit.data.peak_memory``). The seed's figures are whole-process
peaks (its generator's 11.5 MB is mostly the interpreter), so they are judged against the process peak RSS
(VmHWM); the load's own share above the interpreter's baseline is shown beside them. The generator's judged peak
is the seed's own stdlib generator run in a bare interpreter (:func:`bare_generator_peak`): the probe's interpreter
carries expkit's imports, which are not the seed's generator.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from expkit.labs.base import (
    AtMost,
    Cause,
    LabContext,
    LabOutput,
    Measurement,
    RuleChange,
    SeedFigure,
    Within,
    judged,
)
from expkit.labs.registry import lab

LIST_RATIO = 5.3  # seed: 102.9 MB / 19.4 MB
GEN_MB = 11.5  # seed: generator 11.5 MB
SEED_LIST = SeedFigure(
    "list_ratio", "list peak / file size, 19.4 MB file", LIST_RATIO, "x", "19.4 MB file: list peak 102.9 MB (5.3x)"
)
SEED_GEN = SeedFigure("generator_peak", "generator pipeline peak", GEN_MB, "MB", "generator 11.5 MB")
SEED_FLAT = SeedFigure("generator_flat", "generator peak vs file size", None, "", "independent of file size")
BASE_BYTES = 19_400_000  # the seed's file: 19.4 MB
MB = 1e6
_WORDS = [
    "the",
    "model",
    "data",
    "train",
    "loss",
    "step",
    "token",
    "batch",
    "learning",
    "rate",
    "gradient",
    "layer",
    "attention",
    "value",
    "key",
    "query",
    "output",
    "input",
    "sample",
    "epoch",
    "weight",
    "bias",
    "norm",
    "dropout",
    "label",
    "answer",
    "question",
    "please",
    "explain",
    "why",
    "how",
    "when",
    "what",
    "which",
    "python",
    "code",
    "file",
    "read",
    "write",
    "list",
    "generator",
    "memory",
]


def _text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choices(_WORDS, k=n_words))


def _record(rng: random.Random, kind: str, i: int) -> dict:
    if kind == "short":  # an instruction pair of a few words: Python object overhead dominates
        return {"id": i, "instruction": _text(rng, rng.randint(3, 12)), "output": _text(rng, rng.randint(3, 15))}
    # a chat record with long turns: the characters dominate
    return {
        "id": i,
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": _text(rng, rng.randint(40, 200))},
            {"role": "assistant", "content": _text(rng, rng.randint(100, 400))},
        ],
    }


def write_base_file(path: Path, kind: str, *, target_bytes: int = BASE_BYTES, seed: int = 0) -> int:
    """Write records of ``kind`` (short | chat) until the file holds ``target_bytes``; returns its size."""
    import orjson

    rng = random.Random(seed)
    size, i = 0, 0
    with open(path, "wb") as f:
        while size < target_bytes:
            line = orjson.dumps(_record(rng, kind, i)) + b"\n"
            f.write(line)
            size += len(line)
            i += 1
    return size


def _repeat_file(src: Path, dst: Path, times: int) -> int:
    with open(dst, "wb") as out:
        for _ in range(times):
            with open(src, "rb") as f:
                shutil.copyfileobj(f, out, 1 << 20)
    return dst.stat().st_size


def load_into_list(path: str) -> int:
    """The pattern the seed warns about: every record parsed and kept (stdlib json, as in the seed)."""
    with open(path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    return len(records)


def _chars(rec: dict) -> int:
    from expkit.data import text_of

    return len(text_of(rec.get("messages") or rec.get("output")) or "")


@dataclass(frozen=True)
class _Point:
    """One file size: the list's and the generator's peaks, whole process (abs) and above the baseline."""

    file_mb: float
    list_abs_mb: float
    list_above_mb: float
    gen_abs_mb: float
    gen_above_mb: float
    gen_baseline_mb: float


def _mb(n_bytes: int | None) -> float:
    if n_bytes is None:  # peak_memory has no baseline without /proc (macOS): the lab's figures need it
        raise RuntimeError("peak_memory measured no interpreter baseline on this OS (needs Linux /proc)")
    return n_bytes / MB


LIST_RULE = Within(
    LIST_RATIO,
    rel=0.25,
    source="our choice: the seed's records are not given; judged on short and on long (chat) records",
)
GEN_RULE = AtMost(GEN_MB * 1.25, source="our choice: the seed's 11.5 MB plus the 25% allowed the list ratio")


def generator_cause(*, bare_mb: float, own_mb: float, file_mb: float) -> Cause | None:
    """Why the generator's process peak is over the seed's figure, from this run's figures; None if they do not
    explain it. A bare interpreter's own peak (``python -c pass``, measured apart) explains it only when it alone
    is over the limit and the pipeline's own share is small (under a tenth of the file: it did not hold the data)."""
    if bare_mb > GEN_RULE.limit and own_mb < 0.1 * file_mb:
        return Cause(
            "peak RSS of a bare interpreter (python -c pass)",
            bare_mb,
            f"this Python alone peaks that high here; the pipeline itself added {own_mb:.2f} MB",
            unit="MB",
            measured_by="a separate interpreter that runs nothing, its VmHWM",
        )
    return None


# the seed's generator in the stdlib alone (json, a generator expression, filter, map, sum), run in a bare
# interpreter; with ``leak`` the "generator" first materializes every record (the bug the seed warns about)
_BARE_GENERATOR = """
import json, sys
path, leak = sys.argv[1], sys.argv[2] == "1"
if path:
    with open(path, encoding="utf-8") as f:
        records = (json.loads(line) for line in f)
        if leak:
            records = iter(list(records))
        kept = (r for r in records if r["id"] >= 0)
        total = sum(len(str(r.get("messages") or r.get("output"))) for r in kept)
with open("/proc/self/status") as status:  # VmHWM: this process's peak; ru_maxrss would carry the parent's
    print([int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:")][0])
"""


def bare_generator_peak(path: Path | None, *, leak: bool = False) -> int:
    """Peak RSS in bytes (Linux ``VmHWM``) of a bare interpreter running the seed's stdlib generator over
    ``path``; ``path=None`` runs nothing (the interpreter's own peak); ``leak=True`` materializes the records
    first (a generator that holds the whole file)."""
    proc = subprocess.run(
        [sys.executable, "-c", _BARE_GENERATOR, str(path or ""), "1" if leak else "0"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(proc.stdout.split()[-1])


def stream_pipeline(path: str) -> int:
    """The same pass as a generator pipeline: read, filter, map, reduce; one record alive at a time."""
    from expkit.data import Pipeline, iter_jsonl

    return sum(Pipeline(iter_jsonl(path)).filter(lambda r: r["id"] >= 0).map(_chars))


def leaky_pipeline(path: str) -> int:
    """A "generator" pipeline that leaks: it materializes every record before the first stage (the flip tests'
    contrary input; nothing in the lab's run uses it)."""
    from expkit.data import Pipeline, iter_jsonl

    return sum(Pipeline(iter(list(iter_jsonl(path)))).filter(lambda r: r["id"] >= 0).map(_chars))


def own_peak_slope(pipeline: Callable[[str], int], small: Path, big: Path) -> float:
    """MB of the pipeline's own peak (above the fresh interpreter's baseline) added per MB of file, ``small`` ->
    ``big``: ~0 for a pipeline that streams, about the list's ratio for one that holds the records."""
    from expkit.data import peak_memory

    lo = peak_memory(pipeline, str(small), trace_python=False)
    hi = peak_memory(pipeline, str(big), trace_python=False)
    d_file = (big.stat().st_size - small.stat().st_size) / MB
    return (_mb(hi.peak_above_baseline_bytes) - _mb(lo.peak_above_baseline_bytes)) / d_file


FLAT_LIMIT = 0.05  # MB of pipeline peak per MB of file


# issue 36: when and why the rules changed after the lab first ran (fdc79e0, 2026-11-29), from `git log -p`
RULE_HISTORY = (
    RuleChange(
        "generator_peak",
        "2026-12-01",
        "96f5954",
        first="expkit's pipeline's process peak RSS in the memory probe's interpreter, at most 11.5 MB + 25%",
        changed="the seed's own generator (stdlib json, generator expressions, sum) in a bare interpreter, at most "
        "11.5 MB + 25%; expkit's pipeline shown beside it",
        why="the probe's interpreter carries expkit's imports, which the seed's process did not",
        seed_text="'生成器流水线 11.5 MB' (the generator pipeline, 11.5 MB): the seed's figure is its own pipeline's "
        "process, run as the seed ran it",
    ),
    RuleChange(
        "list_ratio",
        "2026-12-03",
        "issue 36",
        first="list peak / file size within +-25% of 5.3x, short records only",
        changed="the same rule judged on short records and on chat records with long turns (list_ratio_chat)",
        why="short records were the input under which the verdict holds; the ratio is a property of the records",
        seed_text="'19.4 MB 的 JSONL 读成 list 峰值 102.9 MB（5.3 倍）'"  # noqa: RUF001 - the seed's own words
        " (a 19.4 MB JSONL read into a list peaks at 102.9 MB, 5.3x): the seed names a file of JSONL, not its "
        "records, so the figure is judged on more than one kind",
    ),
)


@lab(
    id="C1.1",
    title="Streaming JSONL keeps memory flat",
    claims=("C1.1",),
    seed=(SEED_LIST, SEED_GEN, SEED_FLAT),
    rule_history=RULE_HISTORY,
)
def run(ctx: LabContext) -> LabOutput:
    from expkit.data import peak_memory
    from expkit.render.figures import new_figure, save_figure

    # both files have the seed's size in both budgets: the seed's figures are absolute process peaks, which
    # include the interpreter, so a smaller file would inflate the ratio; the seed does not say what its records
    # hold, so the list ratio is judged on short records and on chat records with long turns (issue 36)
    plan = {
        "short": (BASE_BYTES, (1, 2) if ctx.quick else (1, 2, 4, 8)),
        "chat": (BASE_BYTES, (1,) if ctx.quick else (1, 2, 4, 8)),
    }
    rows: dict[str, list[_Point]] = {}
    bare_mb = bare_generator_peak(None) / MB  # python -c "": what any script here starts from
    with tempfile.TemporaryDirectory(prefix="expkit-c1_1-") as tmp:
        for kind, (base_bytes, multiples) in plan.items():
            base = Path(tmp) / f"{kind}_1x.jsonl"
            write_base_file(base, kind, target_bytes=base_bytes, seed=ctx.seed)
            if kind == "short":
                seed_gen_mb = bare_generator_peak(base) / MB  # the seed's stdlib generator, no probe imports
            rows[kind] = []
            for m in multiples:
                path = base if m == 1 else Path(tmp) / f"{kind}_{m}x.jsonl"
                size = base.stat().st_size if m == 1 else _repeat_file(base, path, m)
                as_list = peak_memory(load_into_list, str(path), trace_python=False)
                gen = peak_memory(stream_pipeline, str(path), trace_python=False)
                rows[kind].append(
                    _Point(
                        size / MB,
                        as_list.peak_rss_bytes / MB,
                        _mb(as_list.peak_above_baseline_bytes),
                        gen.peak_rss_bytes / MB,
                        _mb(gen.peak_above_baseline_bytes),
                        _mb(gen.baseline_rss_bytes),
                    )
                )
                if m != 1:
                    path.unlink()

    fig, (ax,) = new_figure(1)
    for kind, style in (("short", "o-"), ("chat", "s--")):
        xs = [p.file_mb for p in rows[kind]]
        ax.plot(xs, [p.list_abs_mb for p in rows[kind]], "C0" + style, label=f"list, {kind} records")
        ax.plot(xs, [p.gen_abs_mb for p in rows[kind]], "C1" + style, label=f"generator, {kind} records")
    ax.set(
        xlabel="file size (MB)",
        ylabel="peak RSS of the process (MB)",
        title="Load into a list vs stream (fresh interpreter per point)",
    )
    ax.legend()
    figure = save_figure(fig, ctx.figure_path("c1_1_memory_vs_size.png"))

    short1, chat1, biggest = rows["short"][0], rows["chat"][0], rows["short"][-1]
    ratio_abs = short1.list_abs_mb / short1.file_mb  # the seed's 5.3x: 102.9 MB process peak / 19.4 MB
    ratio_above = short1.list_above_mb / short1.file_mb  # the list's own share, interpreter excluded
    ratio_chat = chat1.list_above_mb / chat1.file_mb
    ratio_chat_abs = chat1.list_abs_mb / chat1.file_mb  # the seed's statistic on long records
    # flatness: what the pipeline's own peak added per MB of file added (the list adds ~ratio_above)
    slope = (biggest.gen_above_mb - short1.gen_above_mb) / (biggest.file_mb - short1.file_mb)
    gen_rule = GEN_RULE
    # differs only when a bare interpreter alone, measured apart, exceeds the limit
    gen_cause = generator_cause(bare_mb=bare_mb, own_mb=seed_gen_mb - bare_mb, file_mb=short1.file_mb)
    measurements = (
        judged(
            "list_ratio",
            f"list: process peak RSS / file size, short records ({short1.file_mb:.1f} MB)",
            ratio_abs,
            "x",
            rule=LIST_RULE,
            seed=SEED_LIST,
            detail=f"process peak {short1.list_abs_mb:.1f} MB (the seed: 102.9 MB), of which "
            f"{short1.list_abs_mb - short1.list_above_mb:.1f} MB interpreter before the load",
        ),
        Measurement(
            "list_ratio_above",
            "list: peak above the interpreter's baseline / file size, short records",
            ratio_above,
            "x",
            detail=f"{short1.list_above_mb:.1f} MB the records themselves",
        ),
        judged(
            "list_ratio_chat",
            f"list: process peak RSS / file size, chat records with long turns ({chat1.file_mb:.1f} MB)",
            ratio_chat_abs,
            "x",
            rule=LIST_RULE,
            seed=SEED_LIST,
            detail=f"process peak {chat1.list_abs_mb:.1f} MB; above the interpreter's baseline "
            f"{chat1.list_above_mb:.1f} MB = {ratio_chat:.2f}x the file: long strings cost ~1 byte/char, short ones "
            "~50 bytes + per-object overhead, so the ratio depends on the records, which the seed does not give",
        ),
        judged(
            "generator_peak",
            f"the seed's stdlib generator in a bare interpreter: process peak RSS, {short1.file_mb:.1f} MB file",
            seed_gen_mb,
            "MB",
            rule=gen_rule,
            seed=SEED_GEN,
            cause=gen_cause,
            detail=f"a bare interpreter running nothing peaks at {bare_mb:.1f} MB; the seed's 11.5 MB is a "
            "whole-process figure like its 102.9 MB",
        ),
        Measurement(
            "generator_peak_probe",
            f"expkit's pipeline in the probe's interpreter: process peak RSS, {short1.file_mb:.1f} MB file",
            short1.gen_abs_mb,
            "MB",
            detail=f"the probe's interpreter with its imports holds {short1.gen_baseline_mb:.1f} MB before the load "
            f"({short1.gen_baseline_mb - bare_mb:.1f} MB over a bare one); the pipeline's own peak "
            f"{short1.gen_above_mb:.2f} MB",
        ),
        judged(
            "generator_flat",
            f"generator: own peak added per MB of file, {short1.file_mb:.0f} -> {biggest.file_mb:.0f} MB",
            slope,
            "MB/MB",
            rule=AtMost(
                FLAT_LIMIT,
                source=f"our choice: a twentieth of a byte per byte of file; the list adds {ratio_above:.1f} here",
            ),
            seed=SEED_FLAT,
            detail=f"pipeline above baseline: {', '.join(f'{p.gen_above_mb:.2f}' for p in rows['short'])} MB at "
            f"{', '.join(f'{p.file_mb:.0f}' for p in rows['short'])} MB files; whole process "
            f"{short1.gen_abs_mb:.1f} -> {biggest.gen_abs_mb:.1f} MB",
        ),
        Measurement(
            "list_peak_largest",
            f"list: process peak RSS at {biggest.file_mb:.0f} MB (short records)",
            biggest.list_abs_mb,
            "MB",
        ),
    )
    gen_text = (
        "within the seed's figure"
        if gen_rule.holds(seed_gen_mb)
        else f"over the seed's 11.5 MB because a bare interpreter alone peaks at {bare_mb:.1f} MB here"
        if gen_cause
        else "over the seed's 11.5 MB"
    )
    explanation = (
        f"Reading a {short1.file_mb:.1f} MB file of short instruction records into a list peaked at "
        f"{short1.list_abs_mb:.0f} MB for the whole process ({ratio_abs:.1f}x the file; the seed: 102.9 MB, 5.3x). "
        f"The records themselves took {short1.list_above_mb:.0f} MB ({ratio_above:.1f}x): each becomes a dict plus a "
        f"str per field, and a small str carries a header before its characters. Chat records with long turns cost "
        f"{ratio_chat:.1f}x above the interpreter and {ratio_chat_abs:.1f}x for the whole process: judged on both, "
        f"the seed's 5.3x is {LIST_RULE.judge(ratio_abs).kind} on short records and "
        f"{LIST_RULE.judge(ratio_chat_abs).kind} on long ones: the ratio is a property of the records. The seed's "
        "generator (stdlib json, generator expressions, sum) in a bare interpreter "
        f"peaked at {seed_gen_mb:.1f} MB for the whole process ({gen_text}; the interpreter alone: {bare_mb:.1f} MB). "
        f"expkit's pipeline (iter_jsonl -> filter -> map -> sum) in the probe's interpreter peaked at "
        f"{short1.gen_abs_mb:.1f} MB, most of it the probe's imports; its own share was {short1.gen_above_mb:.2f} MB; "
        f"at {biggest.file_mb:.0f} MB it added {slope:.3f} MB per MB of file, while the "
        f"list reached {biggest.list_abs_mb:.0f} MB. Each figure is VmHWM of a fresh interpreter; the baseline is its "
        "RSS just before the load, after imports."
    )
    return LabOutput(measurements=measurements, explanation=explanation, figures=(figure,))

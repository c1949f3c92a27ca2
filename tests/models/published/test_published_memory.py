"""expkit's memory prediction against published measured peaks (issue 19 item 4).

Inference: ``expkit mem <config dir> --mode infer --context (input + 2048 + 1) --json``, ``peak_bytes``, against
Qwen's speed-benchmark tables within +-5 %. Training: ``expkit mem llama-2-7b --method qlora --lora-r 8
--grad-ckpt full --seq N --json`` against LLaMA-Factory's QLoRA table within +-10 %. A point expkit misses
today is ``xfail(strict=True)``. The table of predicted vs published is written to
``$EXPKIT_PUBLISHED_TABLE`` (default /tmp/expkit-published-memory.md) for the issue's note.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pytest
from published_memory_tables import (
    INFERENCE,
    INFERENCE_SETTINGS,
    INFERENCE_TOLERANCE,
    QLORA,
    QLORA_SETTINGS,
    QLORA_TOLERANCE,
    QWEN3_SOURCE,
    InferencePoint,
    TrainingPoint,
)
from published_truths import CONFIGS

TABLE_PATH = Path(os.environ.get("EXPKIT_PUBLISHED_TABLE", "/tmp/expkit-published-memory.md"))


@functools.cache
def _ledger(*args: str) -> dict:
    from typer.testing import CliRunner

    from expkit.cli.app import app

    res = CliRunner().invoke(app, ["mem", *args, "--json"])
    assert res.exit_code == 0, res.stdout
    return json.loads(res.stdout)["result"]


def _peak(*args: str) -> int:
    return int(_ledger(*args)["peak_bytes"])


def _line(ledger: dict, *names: str) -> int:
    return sum(int(ln["bytes"]) for ln in ledger["lines"] if ln["name"] in names)


# What each table's method captures (issue 19 item 4), read from its numbers:
# - both are allocator figures (torch.cuda.max_memory_allocated): at input 1 Qwen3-8B's bf16 weights
#   (15,622 MiB) + its KV cache at 2,050 tokens (288 MiB) leave 37 MiB to the published 15,947 MiB, no room for
#   a CUDA context, so the ledger's runtime-overhead estimate is not compared;
# - Qwen2.5's table (source 2) grows 5.59 GiB from input 1 to 30,720 while the KV cache grows 1.53 GiB: it
#   captures the prefill's transient peak, so the ledger's peak (prefill or decode, the larger) is compared;
# - Qwen3's table (source 1) grows by exactly the KV cache (864 / 2,016 / 4,320 MiB = 6,144 / 14,336 / 30,720
#   tokens * 144 KiB): it captures no prefill transient, so the ledger's decode moment (weights + KV cache at
#   the full context + one step's logits) is compared.
def predict_inference(p: InferencePoint) -> int:
    args = ("--mode", "infer", "--context", str(p.context), "--prompt", str(p.input_tokens), "--batch", "1")
    led = _ledger(str(CONFIGS / p.model), *args)
    if p.source == QWEN3_SOURCE:
        return _line(led, "weights", "KV cache", "logits / loss")
    return int(led["peak_bytes"]) - _line(led, "runtime overhead")


def predict_qlora(p: TrainingPoint) -> int:
    args = ("--method", "qlora", "--lora-r", "8", "--lora-targets", "all-linear", "--grad-ckpt", "full")
    return _peak(p.model, *args, "--seq", str(p.seq), "--batch", "1", "--attention", "sdpa")


def _marks(ok_today: bool, why: str) -> tuple:
    return () if ok_today else (pytest.mark.xfail(reason=f"issue 19 item 4: {why}", strict=True),)


# Points expkit misses today (measured when these tests were written, table in the module docstring's file);
# each is xfail(strict) with why. The prefill's transient terms, the QLoRA recipe's fp32 non-4-bit parameters
# and residual stream (issue 19 item 4) brought every other point within its tolerance.
AWQ_PREFILL = (
    "Qwen3-8B-AWQ grows 504 MiB more than its KV cache from input 1 to 30,720 (16.4 KiB per prompt token on average;"
    " 72 and 216 MiB at 6,144 and 14,336), a term of the AWQ path that the bf16 run of the same table does not "
    "show: 18 KiB x (n - 2,048) at all three lengths; AutoAWQ's prefill dequantization is a per-layer constant, "
    "not per token; cause not established, see README.md (-5.2 %)"
)
INFERENCE_MISSED_TODAY = {("qwen3-8b-awq", 30720): AWQ_PREFILL}
QLORA_MISSED_TODAY: dict[int, str] = {}


def _marks(why: str | None) -> tuple:
    return () if why is None else (pytest.mark.xfail(reason=f"issue 19 item 4: {why}", strict=True),)


@pytest.mark.parametrize(
    "point",
    [
        pytest.param(
            p, id=f"{p.model}-{p.input_tokens}", marks=_marks(INFERENCE_MISSED_TODAY.get((p.model, p.input_tokens)))
        )
        for p in INFERENCE
    ],
)
def test_inference_peak_within_5_percent(point):
    assert predict_inference(point) == pytest.approx(point.peak_bytes, rel=INFERENCE_TOLERANCE)


@pytest.mark.parametrize(
    "point", [pytest.param(p, id=f"{p.model}-{p.seq}", marks=_marks(QLORA_MISSED_TODAY.get(p.seq))) for p in QLORA]
)
def test_qlora_peak_within_10_percent(point):
    assert predict_qlora(point) == pytest.approx(point.peak_bytes, rel=QLORA_TOLERANCE)


def _row(label: str, tokens: str, published: str, predicted: int, published_bytes: int, tolerance: float) -> str:
    err = predicted / published_bytes - 1
    within = "yes" if abs(err) <= tolerance else "no"
    return f"| {label} | {tokens} | {published} | {predicted / 2**30:.2f} GiB | {err:+.1%} | {within} |"


def _table_rows() -> list[str]:
    rows = ["| model | tokens | published | predicted | predicted / published - 1 | within |"]
    rows.append("|---|---|---|---|---|---|")
    for p in INFERENCE:
        tokens = f"input {p.input_tokens:,}"
        pred = predict_inference(p)
        rows.append(_row(f"{p.label} (infer)", tokens, p.published, pred, p.peak_bytes, INFERENCE_TOLERANCE))
    for q in QLORA:
        pred = predict_qlora(q)
        rows.append(_row("LLaMA2-7B QLoRA r8", f"seq {q.seq:,}", q.published, pred, q.peak_bytes, QLORA_TOLERANCE))
    return rows


def test_write_predicted_vs_published_table():
    rows = _table_rows()
    text = "\n".join(
        [
            "# expkit predicted vs published peak memory (issue 19 item 4)",
            "",
            f"Inference (+-{INFERENCE_TOLERANCE:.0%}): {INFERENCE_SETTINGS}; expkit mem --mode infer, peak_bytes.",
            f"QLoRA (+-{QLORA_TOLERANCE:.0%}): {QLORA_SETTINGS}; "
            "expkit mem --method qlora --lora-r 8 --grad-ckpt full.",
            "Sources: see tests/models/published/published_memory_tables.py.",
            "",
            *rows,
            "",
        ]
    )
    TABLE_PATH.write_text(text)
    assert len(rows) == 2 + len(INFERENCE) + len(QLORA)
    # the table says "no" exactly where the tests above are xfail today
    missed = {r.split(" | ")[0] + r.split(" | ")[1] for r in rows[2:] if r.endswith("| no |")}
    expected = {
        f"| {p.label} (infer)input {p.input_tokens:,}"
        for p in INFERENCE
        if (p.model, p.input_tokens) in INFERENCE_MISSED_TODAY
    } | {f"| LLaMA2-7B QLoRA r8seq {q.seq:,}" for q in QLORA if q.seq in QLORA_MISSED_TODAY}
    assert missed == expected, "update INFERENCE_MISSED_TODAY / QLORA_MISSED_TODAY (and so the xfail markers)"

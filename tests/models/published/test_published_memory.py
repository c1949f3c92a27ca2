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
    InferencePoint,
    TrainingPoint,
)
from published_truths import CONFIGS

TABLE_PATH = Path(os.environ.get("EXPKIT_PUBLISHED_TABLE", "/tmp/expkit-published-memory.md"))


@functools.cache
def _peak(*args: str) -> int:
    from typer.testing import CliRunner

    from expkit.cli.app import app

    res = CliRunner().invoke(app, ["mem", *args, "--json"])
    assert res.exit_code == 0, res.stdout
    return int(json.loads(res.stdout)["result"]["peak_bytes"])


def predict_inference(p: InferencePoint) -> int:
    return _peak(str(CONFIGS / p.model), "--mode", "infer", "--context", str(p.context), "--batch", "1")


def predict_qlora(p: TrainingPoint) -> int:
    args = ("--method", "qlora", "--lora-r", "8", "--lora-targets", "all-linear", "--grad-ckpt", "full")
    return _peak(p.model, *args, "--seq", str(p.seq), "--batch", "1", "--attention", "sdpa")


def _marks(ok_today: bool, why: str) -> tuple:
    return () if ok_today else (pytest.mark.xfail(reason=f"issue 19 item 4: {why}", strict=True),)


# Points expkit misses today (measured when these tests were written, table in the module docstring's file);
# each is xfail(strict) with why. Under: the prefill's transient terms are missing; over: at a 1-token prompt
# the ledger's fixed terms (0.5 GiB runtime-overhead estimate, quantized weights) exceed the measured peak.
PREFILL = "under: the prefill's transient peak (prompt logits, attention workspace) is not in the inference ledger"
OVER = "over at a short prompt: fixed terms (0.5 GiB runtime estimate, quantized weight bytes) above the peak"
INFERENCE_MISSED_TODAY = {
    ("qwen3-8b-awq", 1): OVER,  # +7.1 %
    ("qwen3-8b-awq", 6144): OVER,  # +5.2 %
    ("qwen2.5-7b-instruct", 14336): PREFILL,  # -8.0 %
    ("qwen2.5-7b-instruct", 30720): PREFILL,  # -17.7 %
    ("qwen2.5-7b-instruct-gptq-int4", 1): OVER,  # +5.07 %
    ("qwen2.5-7b-instruct-gptq-int4", 6144): PREFILL,  # -6.0 %
    ("qwen2.5-7b-instruct-gptq-int4", 14336): PREFILL,  # -18.5 %
    ("qwen2.5-7b-instruct-gptq-int4", 30720): PREFILL,  # -33.0 %
    ("qwen2.5-7b-instruct-awq", 1): OVER,  # +7.6 %
    ("qwen2.5-7b-instruct-awq", 14336): PREFILL,  # -17.1 %
    ("qwen2.5-7b-instruct-awq", 30720): PREFILL,  # -32.3 %
}
QLORA_MISSED_TODAY = {seq: "QLoRA training peak 17-23 % low" for seq in (1024, 2048, 4096, 8192, 16384, 32768)}


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

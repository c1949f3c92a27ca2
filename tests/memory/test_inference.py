"""The inference ledger's two moments (issue 19 item 4): prefill (prompt KV cache + transient terms) and the end
of decoding (full KV cache + one step's logits). Published tables: tests/models/published."""

from __future__ import annotations

import dataclasses

import pytest

from expkit.errors import UsageError
from expkit.memory.inference import PREFILL_LINES, InferenceQuery, ledger_for_inference
from expkit.models.description import resolve_description

QWEN = resolve_description("qwen2.5-7b")  # hidden 3584, intermediate 18944, 28 heads, vocab 152064


def _ledger(**options: object):  # noqa: ANN202 - a Ledger
    return ledger_for_inference(dataclasses.replace(InferenceQuery(model=QWEN, device="cpu"), **options))


def test_largest_intermediate_by_hand() -> None:
    led = _ledger(context=8192, prompt=4096)
    # 2 B * 4096 tokens * (4 * 3584 hidden-width + 3 * 18944 intermediate-width: SiLU(gate), up, product)
    assert led.line("prefill: largest intermediate").bytes == 2 * 4096 * (4 * 3584 + 3 * 18944)
    assert led.line("prefill: attention workspace").bytes == 4 * 4096 * 28  # fp32 log-sum-exp per head
    assert led.line("prefill: prompt logits").bytes == 152064 * (2 + 4)  # last position only


def test_peak_is_the_larger_moment_and_lines_sum() -> None:
    short, long = _ledger(context=32769, prompt=1), _ledger(context=32769, prompt=30720)
    for led in (short, long):
        assert led.per_gpu_bytes == sum(ln.bytes for ln in led.lines)
        assert led.assumptions and any("prefill" in a for a in led.assumptions)
    decode = short.bytes_of("weights", "KV cache", "logits / loss")
    assert short.peak_phase == "decode at full context" and short.peak_bytes == decode
    assert long.peak_phase.startswith("prefill of 30,720")
    prompt_kv = long.line("KV cache").bytes * 30720 // 32769
    assert long.peak_bytes == pytest.approx(long.bytes_of("weights", *PREFILL_LINES) + prompt_kv, rel=1e-6)


def test_prompt_defaults_to_the_context_and_cannot_exceed_it() -> None:
    assert _ledger(context=2048).line("prefill: attention workspace").bytes == 4 * 2048 * 28
    with pytest.raises(UsageError, match=r"prompt 4097 is longer than context 4096"):
        _ledger(context=4096, prompt=4097)
    with pytest.raises(UsageError, match=r"prompt must be a positive integer"):
        _ledger(prompt=0)

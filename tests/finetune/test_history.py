"""Earlier assistant turns that the template renders otherwise in history than as the last turn (issue 35 item 3),
on the real Qwen3 template (TRL 1.16's ``qwen3.jinja``, "Original Qwen3 chat template" in its README): it strips the
reasoning of turns before the last user message and opens only the last turn with a think block.

The expected texts are computed independently of ``finetune.history``: what the model generates for a turn is the
text ``render(messages[:i + 1])`` adds after ``render(messages[:i], add_generation_prompt=True)``, by plain string
difference on the template's renders.
"""

from __future__ import annotations

import logging
from functools import cache
from typing import Any

import pytest
from families.catalog import build_tokenizer, trl_template_dir

from expkit.finetune.chatdata import ChatExample
from expkit.finetune.conventions import render_template
from expkit.finetune.labels import IGNORE, LabelBuilder, audit_labels

REASONING = (
    {"role": "user", "content": "What is 6*7?"},
    {"role": "assistant", "reasoning_content": "Six sevens are forty-two.", "content": "42"},
    {"role": "user", "content": "And 6*8?"},
    {"role": "assistant", "reasoning_content": "One more six: forty-eight.", "content": "48"},
)


@pytest.fixture(autouse=True)
def _quiet():
    logging.getLogger("transformers").setLevel(logging.ERROR)


def _template(name: str) -> str:
    return (trl_template_dir() / f"{name}.jinja").read_text()


@cache
def _tokenizer(name: str) -> Any:
    t = _template(name)
    texts = [render_template(t, list(REASONING[: i + 1])) for i in range(4)]
    texts += [render_template(t, list(REASONING[:i]), add_generation_prompt=True) for i in (1, 3)]
    return build_tokenizer(t, texts, eos="<|im_end|>")


def _as_generated(template: str, messages: tuple[dict[str, Any], ...], i: int) -> str:
    """What the model writes for assistant message i: the render's difference from the generation prompt, through
    <|im_end|>."""
    ask = render_template(template, list(messages[:i]), add_generation_prompt=True)
    full = render_template(template, list(messages[: i + 1]))
    assert full.startswith(ask)
    return full[len(ask) : full.index("<|im_end|>", len(ask)) + len("<|im_end|>")]


def _trained(tok: Any, row: Any) -> str:
    return tok.decode([t for t, y in zip(row.input_ids, row.labels, strict=True) if y != IGNORE])


def test_qwen3_earlier_reasoning_turn_is_trained_as_generated_in_a_row_of_its_own():
    template, tok = _template("qwen3"), _tokenizer("qwen3")
    lab = LabelBuilder(tok).build(ChatExample(messages=REASONING))
    first, last = _as_generated(template, REASONING, 1), _as_generated(template, REASONING, 3)
    assert first == "<think>\nSix sevens are forty-two.\n</think>\n\n42<|im_end|>"  # what inference asks of turn 1
    assert [r.turn for r in lab.rows] == [1, None]
    own = lab.turn_rows[0]
    # the row is the conversation up to turn 1, as inference renders it; turn 1 alone is trained, as generated
    assert tok.decode(list(own.input_ids)) == render_template(template, list(REASONING[:2]))
    assert _trained(tok, own) == first
    # the whole conversation's row: turn 1 rendered as history (no reasoning) and masked; turn 3 as generated, after
    # exactly the generation prompt inference shows for it (earlier reasoning stripped there too)
    assert _trained(tok, lab) == last
    whole = tok.decode(list(lab.input_ids))
    assert whole.startswith(render_template(template, list(REASONING[:3]), add_generation_prompt=True))
    assert "Six sevens" not in whole


def test_the_audit_checks_every_row_and_no_reasoning_is_dropped_from_training():
    """Before: turn 1 was trained as '42<|im_end|>' (its history render), its reasoning named dropped (exit 1), and
    a 'history differs' note said the model was asked for another text at inference."""
    tok = _tokenizer("qwen3")
    audit = audit_labels(tokenizer=tok, examples=[ChatExample(messages=REASONING)], show=1)
    assert audit.ok, audit.problems
    assert [v.turn for v in audit.shown] == [1, None]
    assert any(n.startswith("history turn in its own row: the template renders message 1") for n in audit.notes)
    rows = LabelBuilder(tok).build(ChatExample(messages=REASONING)).rows
    assert audit.total_tokens == sum(len(r.input_ids) for r in rows)


def test_trl_convention_trains_every_turn_in_place_with_its_training_template():
    """--match trl: TRL's qwen3_training.jinja renders the think block in every turn, in one row."""
    tok = _tokenizer("qwen3")
    lab = LabelBuilder(tok, match="trl").build(ChatExample(messages=REASONING))
    assert lab.turn_rows == ()
    trained = _trained(tok, lab)
    assert "Six sevens are forty-two." in trained and "One more six: forty-eight." in trained


def test_a_template_that_renders_history_as_generated_keeps_every_turn_in_place():
    """Qwen 2.5 renders each turn the same in history and as the last turn: one row, both turns trained."""
    msgs = tuple({k: v for k, v in m.items() if k != "reasoning_content"} for m in REASONING)
    template = _template("qwen2_5")
    tok = build_tokenizer(template, [render_template(template, list(msgs))], eos="<|im_end|>")
    lab = LabelBuilder(tok).build(ChatExample(messages=msgs))
    assert lab.turn_rows == ()
    assert _trained(tok, lab) == "42<|im_end|>48<|im_end|>"


def test_completion_loss_trains_the_last_turn_only_and_makes_no_extra_row():
    lab = LabelBuilder(_tokenizer("qwen3"), loss="completion").build(ChatExample(messages=REASONING))
    assert lab.turn_rows == ()


def test_sft_trains_every_row(tmp_path):
    """The trainer gets the rows the audit checked: two per Qwen3 reasoning conversation."""
    from expkit.finetune.training import SFTSettings, train_lora_sft
    from expkit.perf.decode import build_tiny_decoder

    tok = _tokenizer("qwen3")
    ids = {"bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id, "pad_token_id": tok.pad_token_id}
    config = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1}
    model = build_tiny_decoder(config={**config, "intermediate_size": 64, **ids, "vocab_size": len(tok)}, seed=0)
    model.save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    settings = SFTSettings(steps=1, batch_size=2, num_threads=1)
    examples = [ChatExample(messages=REASONING)] * 3
    r = train_lora_sft(
        model_dir=tmp_path / "m", examples=examples, out_dir=tmp_path / "o", settings=settings, record=False
    )
    assert (r.examples, r.rows) == (3, 6)

"""--match trl against expkit's default on a Qwen3 (stock template) tokenizer: TRL's labels on request, and the
audit naming the rules by which they differ; expkit's spans on a template that does not render turns as
prefixes."""

from __future__ import annotations

import json
from functools import partial

import pytest
from families.catalog import build_tokenizer, conversations, trl_template_dir

from expkit.errors import UsageError
from expkit.finetune.chatdata import ChatExample, generate_chat_examples, write_chat_jsonl
from expkit.finetune.conventions import render_template, trl_spans
from expkit.finetune.labels import IGNORE, LabelBuilder, audit_labels
from expkit.finetune.spans import derive_assistant_spans, strip_generation_markers


@pytest.fixture(scope="module")
def qwen3_dir(tmp_path_factory):
    """A directory with a small BPE tokenizer carrying Qwen3's stock template and special tokens."""
    template = (trl_template_dir() / "qwen3.jinja").read_text()
    texts = [render_template(template, m) for m in conversations().values()]
    tok = build_tokenizer(template, texts, eos="<|im_end|>")
    out = tmp_path_factory.mktemp("qwen3")
    tok.save_pretrained(out)
    return out


def _tok(path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


def test_match_trl_gives_trls_labels_and_expkit_trains_content_and_end_of_turn(qwen3_dir):
    tok = _tok(qwen3_dir)
    msgs = conversations()["multi-turn"]
    ex = ChatExample(messages=tuple(msgs))
    ours = LabelBuilder(tok).build(ex)
    theirs = LabelBuilder(tok, match="trl").build(ex)
    decode = lambda lab: tok.decode([t for t, x in zip(lab.input_ids, lab.labels, strict=True) if x != IGNORE])  # noqa: E731
    # expkit: what follows the generation prompt "<|im_start|>assistant\n" through <|im_end|>, for every turn as the
    # model generates it: the stock template renders the empty think block only in the last turn, so the first
    # answer is trained in a row of its own (the conversation up to it) and masked in the whole conversation's row;
    # TRL (its qwen3_training.jinja markers): the empty think block before every answer, in place, and the newline
    # after <|im_end|> too
    assert [r.turn for r in ours.rows] == [2, None]
    assert [decode(r) for r in ours.rows] == [
        "<think>\n\n</think>\n\n5<|im_end|>",
        "<think>\n\n</think>\n\n8<|im_end|>",
    ]
    assert tok.decode(list(ours.turn_rows[0].input_ids)).endswith(
        "<|im_start|>assistant\n<think>\n\n</think>\n\n5<|im_end|>\n"
    )
    assert decode(theirs) == "<think>\n\n</think>\n\n5<|im_end|>\n<think>\n\n</think>\n\n8<|im_end|>\n"
    trl_text, mask = trl_spans((trl_template_dir() / "qwen3_training.jinja").read_text(), msgs)
    assert decode(theirs) == "".join(c for c, m in zip(trl_text, mask, strict=True) if m)  # what TRL trains


def test_audit_names_the_rules_and_the_cli_flag_switches(qwen3_dir, tmp_path, cli):
    examples = generate_chat_examples(n=6, seed=1)
    audit = audit_labels(tokenizer=_tok(qwen3_dir), examples=examples)
    assert audit.ok and audit.match == "expkit" and audit.trl is not None
    assert audit.trl.trl_template == "TRL training template"
    # one-turn conversations: both train the empty think block the stock render opens after the generation prompt
    assert audit.trl.rules == {"trailing newline after end-of-turn": 6}
    data = write_chat_jsonl(examples, tmp_path / "d.jsonl")
    res = cli("sft", "audit", "--model", str(qwen3_dir), "--data", str(data), "--show", "0")
    assert res.exit_code == 0, res.stderr
    assert "trailing newline after end-of-turn: 6 conversations" in res.stdout
    assert "labels: expkit convention" in res.stdout
    res = cli("sft", "audit", "--model", str(qwen3_dir), "--data", str(data), "--match", "trl", "--json")
    assert res.exit_code == 0, res.stderr
    got = json.loads(res.stdout)["result"]["audit"]
    assert got["match"] == "trl" and got["span_source"] == "TRL training template"
    assert got["trained_tokens"] > audit.trained_tokens  # TRL trains the newline after <|im_end|> on top


def test_match_trl_without_a_trl_template_is_refused_with_the_reason(tmp_path):
    plain = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    texts = [render_template(plain, m) for m in conversations().values()]
    tok = build_tokenizer(plain, texts, eos="<|im_end|>")
    with pytest.raises(UsageError, match=r"^match 'trl': TRL has no training template") as refused:
        LabelBuilder(tok, match="trl")
    assert "--" not in refused.value.message + (refused.value.hint or "")  # the library names no CLI flag
    with pytest.raises(UsageError, match="match must be expkit or trl"):
        LabelBuilder(tok, match="axolotl")  # type: ignore[arg-type]


def test_spans_of_a_template_that_does_not_render_turns_as_prefixes():
    """Mistral v3 puts the system prompt into the last user turn only when that turn ends the conversation: the
    prompt for the first answer, render(m[:2]), is no prefix of render(m)."""
    from families.catalog import HERE

    template = (HERE / "mistral_v3.jinja").read_text()
    msgs = conversations()["multi-turn"]
    render = partial(render_template, template)
    assert "Be brief" in render(msgs[:2]) and not render(msgs).startswith(render(msgs[:2]))  # old rule: refused
    d = derive_assistant_spans(render, msgs)
    assert [d.text[s.content_start : s.end] for s in d.spans] == ["5</s>", "8</s>"]


def test_strip_generation_markers_keeps_the_rendered_text():
    template = (trl_template_dir() / "qwen3_training.jinja").read_text()
    for msgs in conversations().values():
        assert render_template(strip_generation_markers(template), msgs) == render_template(template, msgs)

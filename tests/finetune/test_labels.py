"""The label audit on the quick demo model's tokenizer: what is trained, and each hard check."""

from __future__ import annotations

import shutil

import pytest

from expkit.errors import InputError
from expkit.finetune.chatdata import ChatExample, generate_chat_examples
from expkit.finetune.demomodel import CHATML_TEMPLATE
from expkit.finetune.labels import IGNORE, LabelBuilder, audit_labels, find_end_of_turn, load_chat_tokenizer

CONVO = ChatExample(
    messages=(
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 2 + 3?"},
        {"role": "assistant", "content": "5"},
        {"role": "user", "content": "And 4 + 4?"},
        {"role": "assistant", "content": "8"},
    )
)


@pytest.fixture
def tok(demo_model_dir):
    return load_chat_tokenizer(demo_model_dir)


def _trained_text(tok, ex_labels):
    return [tok.decode([t]) for t, lab in zip(ex_labels.input_ids, ex_labels.labels, strict=True) if lab != IGNORE]


def test_only_assistant_turns_and_their_end_of_turn_are_trained(tok):
    eot = find_end_of_turn(tok)
    assert eot.token == "<|im_end|>"
    lab = LabelBuilder(tok).build(CONVO)
    # hand-derived: the digits are single tokens (Digits pre-tokenizer), each answer closed by <|im_end|>
    assert _trained_text(tok, lab) == ["5", "<|im_end|>", "8", "<|im_end|>"]
    assert lab.masked_fraction == pytest.approx(1 - 4 / len(lab.input_ids))
    # completion: only the last assistant turn
    assert _trained_text(tok, LabelBuilder(tok, loss="completion").build(CONVO)) == ["8", "<|im_end|>"]
    assert LabelBuilder(tok, loss="all").build(CONVO).masked_fraction == 0.0


def test_derived_spans_equal_marker_spans(tok, demo_model_dir):
    plain = load_chat_tokenizer(demo_model_dir)
    plain.chat_template = CHATML_TEMPLATE.replace("{%- generation %}", "").replace("{%- endgeneration %}", "")
    examples = [CONVO, *generate_chat_examples(n=30, seed=2)]
    marked, derived = LabelBuilder(tok), LabelBuilder(plain)
    assert not derived.markers
    for ex in examples:
        assert marked.build(ex).labels == derived.build(ex).labels
    audit = audit_labels(tokenizer=plain, examples=examples)
    assert audit.span_source == "derived from rendered turns" and "generation" in audit.notes[0] and audit.ok


def test_audit_of_good_data_passes_and_counts(tok):
    examples = generate_chat_examples(n=50, seed=1)
    audit = audit_labels(tokenizer=tok, examples=examples, show=2)
    assert audit.ok and audit.examples == 50 and len(audit.shown) == 2
    assert audit.total_tokens == sum(len(LabelBuilder(tok).build(e).input_ids) for e in examples)
    assert audit.masked_fraction == pytest.approx(1 - audit.trained_tokens / audit.total_tokens)
    assert 0.5 < audit.masked_fraction < 1.0
    assert any(trained for _, trained in audit.shown[0].tokens)


def test_end_of_turn_masked_is_reported_per_example(tok):
    audit = audit_labels(tokenizer=tok, examples=[CONVO, CONVO], eos_in_loss=False)
    assert [p.check for p in audit.problems] == ["stop_token_not_trained"] * 2
    assert [p.index for p in audit.problems] == [0, 1]


def test_markers_closing_before_the_end_of_turn_fail(tok):
    tok.chat_template = CHATML_TEMPLATE.replace(
        "{%- generation %}{{- message['content'] + '<|im_end|>' }}{%- endgeneration %}",
        "{%- generation %}{{- message['content'] }}{%- endgeneration %}{{- '<|im_end|>' }}",
    )
    audit = audit_labels(tokenizer=tok, examples=[CONVO])
    assert audit.problems[0].check == "stop_token_not_trained" and "never taught to stop" in audit.problems[0].message


def test_pad_equal_to_end_of_turn_is_reported_once(tok):
    tok.pad_token = "<|im_end|>"
    audit = audit_labels(tokenizer=tok, examples=[CONVO, CONVO])
    assert [p.check for p in audit.problems] == ["pad_is_eos"]


def test_truncation_that_cuts_the_stop_token(tok):
    n = len(LabelBuilder(tok).build(CONVO).input_ids)
    audit = audit_labels(tokenizer=tok, examples=[CONVO], max_length=n - 2)  # cuts "<|im_end|>\n" of turn 2
    checks = {p.check for p in audit.problems}
    assert checks == {"truncation_cuts_stop"}
    audit = audit_labels(tokenizer=tok, examples=[CONVO], max_length=n - 1)  # cuts only the final "\n"
    assert audit.ok


def test_example_with_nothing_trained(tok):
    audit = audit_labels(tokenizer=tok, examples=[CONVO], max_length=8)
    assert audit.problems[0].check == "no_trained_token"


def test_model_dir_without_tokenizer_or_template(tmp_path, demo_model_dir):
    with pytest.raises(InputError, match="no tokenizer"):
        load_chat_tokenizer(tmp_path)
    copy = tmp_path / "m"
    shutil.copytree(demo_model_dir, copy)
    for f in copy.glob("chat_template*"):
        f.unlink()
    cfg = copy / "tokenizer_config.json"
    import json

    data = json.loads(cfg.read_text())
    data.pop("chat_template", None)
    cfg.write_text(json.dumps(data))
    with pytest.raises(InputError, match="no chat template"):
        load_chat_tokenizer(copy)
    with pytest.raises(InputError, match="not found"):
        load_chat_tokenizer(tmp_path / "nope")


def test_prompt_completion_trains_the_completion_and_the_end_of_turn(tok):
    ex = ChatExample(prompt="What is 2 + 3? ", completion="5")
    lab = LabelBuilder(tok).build(ex)
    assert _trained_text(tok, lab) == ["5", "<|im_end|>"]
    assert LabelBuilder(tok, loss="all").build(ex).masked_fraction == 0.0
    audit = audit_labels(tokenizer=tok, examples=[ex])
    assert audit.ok and audit.span_source == "prompt/completion"


def test_labels_equal_trl_assistant_only_loss(demo_model_dir, tmp_path):
    """What expkit audits and trains is what TRL itself would train with assistant_only_loss=True."""
    import warnings

    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    examples = [CONVO, *generate_chat_examples(n=20, seed=6)]
    tok = load_chat_tokenizer(demo_model_dir)
    ds = Dataset.from_dict({"messages": [list(e.messages) for e in examples]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        args = SFTConfig(
            output_dir=str(tmp_path),
            max_steps=1,
            report_to="none",
            bf16=False,
            use_cpu=True,
            gradient_checkpointing=False,
            assistant_only_loss=True,
            max_length=512,
        )
        trainer = SFTTrainer(
            model=AutoModelForCausalLM.from_pretrained(demo_model_dir),
            args=args,
            train_dataset=ds,
            processing_class=tok,
        )
    builder = LabelBuilder(load_chat_tokenizer(demo_model_dir))
    for i, ex in enumerate(examples):
        ours = builder.build(ex)
        assert list(trainer.train_dataset[i]["input_ids"]) == list(ours.input_ids)
        assert list(trainer.train_dataset[i]["labels"]) == list(ours.labels)


def test_a_template_that_reads_only_text_blocks_loads(tmp_path):
    """TRL's llava_next.jinja reads ``content[0].text``: the load check rendered string content only and refused it
    ('str object' has no attribute 'text'), so no Llava-Next model could be audited or trained."""
    from families.catalog import build_tokenizer, trl_template_dir

    template = (trl_template_dir() / "llava_next.jinja").read_text()
    tok = build_tokenizer(template, ["[INST] hi [/INST] ok</s>"], eos="</s>")
    tok.save_pretrained(tmp_path)
    assert load_chat_tokenizer(tmp_path).chat_template == template
    tok.chat_template = "{{ messages[0]['content'].nope.nope }}"  # renders neither way: still refused, named
    tok.save_pretrained(tmp_path)
    with pytest.raises(InputError, match="the chat template does not render"):
        load_chat_tokenizer(tmp_path)

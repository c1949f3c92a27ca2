"""class_ids_regressed: a Hugging Face sequence classifier built with num_labels=1 (a regressor: mean squared
error) trained on integer class ids (transformers#1706: https://github.com/huggingface/transformers/issues/1706),
beside the classifier with one logit per class and the regressor given float targets."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
from source_lines import line_of as _line_of  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _classifier(num_labels: int, float_labels: bool = False):
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    with watch(steps=2) as w:
        cfg = BertConfig(
            vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
            max_position_embeddings=16,
            num_labels=num_labels,  # the head's width
        )  # fmt: skip
        model = BertForSequenceClassification(cfg)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        for _ in range(3):
            ids = torch.randint(1, 32, (8, 10))
            labels = ids[:, 0] % 4
            out = model(input_ids=ids, labels=labels.float() if float_labels else labels)
            opt.zero_grad()
            out.loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "class_ids_regressed"]


def test_class_ids_given_to_a_one_output_classifier_are_found_at_num_labels():
    (f,) = _classifier(1)
    assert f.line == _line_of("# the head's width", _classifier)
    assert set(f.evidence["label_values"]) <= {0, 1, 2, 3} and len(f.evidence["label_values"]) >= 2


@pytest.mark.parametrize(("num_labels", "float_labels"), [(4, False), (1, True)])
def test_a_classifier_with_a_logit_per_class_and_a_regressor_on_floats_are_silent(num_labels, float_labels):
    assert _classifier(num_labels, float_labels) == []


def _t5_steps(how: str):
    """Three steps of a tiny T5 on targets without a BOS: decoder inputs built as target[:, :-1] with labels
    target[:, 1:] (``dropped``), or the labels shifted right after the start token (``shifted``), or labels only."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.T5Config(
        vocab_size=20, d_model=16, d_kv=4, d_ff=32, num_layers=1, num_heads=2, decoder_start_token_id=0
    )
    model = transformers.T5ForConditionalGeneration(config)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            src, tgt = torch.randint(2, 20, (4, 6)), torch.randint(2, 20, (4, 5))
            start = torch.zeros(4, 1, dtype=torch.long)
            shifted = torch.cat([start, tgt[:, :-1]], 1)
            decoder_input_ids = tgt[:, :-1].contiguous() if how == "dropped" else shifted  # decoder inputs made
            labels = tgt[:, 1:].contiguous() if how == "dropped" else tgt
            if how == "labels_only":
                loss = model(input_ids=src, labels=tgt).loss
            else:
                loss = model(input_ids=src, decoder_input_ids=decoder_input_ids, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "decoder_start_missing"]


def test_decoder_inputs_without_the_start_token_are_found_where_they_were_made():
    # the outside development program batch19/bugs/t5_reverse_task_manual_decoder_inputs.py (from
    # https://github.com/huggingface/transformers/issues/5987): BART's old target[:, :-1] / target[:, 1:] on T5
    (f,) = _t5_steps("dropped")
    assert f.line == _line_of("# decoder inputs made", _t5_steps) and f.evidence["rows_without_start"] == 1.0


@pytest.mark.parametrize("how", ["shifted", "labels_only"])
def test_decoder_inputs_that_start_with_the_start_token_or_labels_alone_are_silent(how):
    assert _t5_steps(how) == []

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

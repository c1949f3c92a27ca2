"""adapter_task_head_frozen: LoRA on a sequence classifier whose config names no task type (the class of
https://github.com/TNI-playground/Fed_HeLLo/issues/2): peft freezes the new classification head, found at the
line that made the config; with task_type SEQ_CLS (peft trains a copy of the head) or the head listed in
modules_to_save it is silent."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")
transformers = pytest.importorskip("transformers")

from source_lines import line_of as _line_of  # noqa: E402

from expkit.doctor import watch  # noqa: E402

CHECK = "adapter_task_head_frozen"


def _lora(how: str):
    torch.manual_seed(0)
    cfg = transformers.BertConfig(
        vocab_size=40, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, num_labels=3
    )
    base = transformers.BertForSequenceClassification(cfg)
    extra = (
        {"task_type": "SEQ_CLS"} if how == "seq_cls" else {"modules_to_save": ["classifier"]} if how == "save" else {}
    )
    lora = peft.LoraConfig(r=4, target_modules=["query", "value"], **extra)  # the adapter's config
    model = peft.get_peft_model(base, lora)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            ids = torch.randint(1, 40, (4, 8))
            out = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=torch.randint(0, 3, (4,)))
            opt.zero_grad()
            out.loss.backward()
            opt.step()
    assert not w.check_errors
    return [f for f in w.findings if f.check == CHECK]


def test_a_classifier_adapted_without_a_task_type_is_found_where_the_config_was_made():
    (f,) = _lora("none")
    assert f.file == __file__ and f.line == _line_of("# the adapter's config", _lora)
    assert f.evidence["head"] == "classifier"


@pytest.mark.parametrize("how", ["seq_cls", "save"])
def test_a_head_peft_trains_is_silent(how):
    assert _lora(how) == []

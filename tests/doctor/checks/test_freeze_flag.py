"""freeze_flag_misspelled: a freeze written as a plain attribute that is not the flag (``p.require_grad = False``
on a parameter, ``module.requires_grad = False`` on a module), while the parameters still require grad; beside the
freezes that work (``requires_grad_(False)``, ``p.requires_grad = False``) and a Hugging Face model whose
parameters carry loader attributes of their own."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of as _line_of  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.encoder(x))


def _freeze(how: str):
    torch.manual_seed(0)
    model = Net()
    if how == "param_typo":
        for p in model.encoder.parameters():
            p.require_grad = False  # the param typo
    elif how == "module_flag":
        model.encoder.requires_grad = False  # the module flag
    elif how == "requires_grad_":
        model.encoder.requires_grad_(False)
    elif how == "param_flag":
        for p in model.encoder.parameters():
            p.requires_grad = False
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            loss = F.cross_entropy(model(torch.randn(8, 8)), torch.randint(0, 3, (8,)))
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "freeze_flag_misspelled"]


@pytest.mark.parametrize(("how", "marker"), [("param_typo", "# the param typo"), ("module_flag", "# the module flag")])
def test_a_freeze_that_sets_a_plain_attribute_is_found_at_the_assignment(how, marker):
    (f,) = _freeze(how)
    assert f.line == _line_of(marker, _freeze) and f.evidence["still_trainable"] == 2


@pytest.mark.parametrize("how", ["requires_grad_", "param_flag", "none"])
def test_freezes_that_work_and_no_freeze_are_silent(how):
    assert _freeze(how) == []


def test_a_hugging_face_model_with_its_own_parameter_attributes_is_silent():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.BertConfig(
        vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, num_labels=2
    )
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            out = model(input_ids=torch.randint(1, 30, (4, 6)), labels=torch.randint(0, 2, (4,)))
            opt.zero_grad()
            out.loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    assert not [f for f in w.findings if f.check == "freeze_flag_misspelled"]

"""Each sanity check must be able to fail: a label leak, an unused module, a missing zero_grad, a NaN."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from train_fixtures import TINY_MODEL

from expkit.train import (
    CharLM,
    check_first_loss,
    find_params_without_grad,
    find_stale_grads,
    locate_first_nonfinite,
)


def test_first_loss_at_ln_v_is_ok_and_the_seed_figure_too():
    assert check_first_loss(math.log(128), vocab_size=128).verdict == "ok"
    assert check_first_loss(5.07, vocab_size=128).verdict == "ok"  # seed C3.4


def test_label_leak_is_caught_on_a_real_model():
    torch.manual_seed(0)
    model = CharLM(TINY_MODEL)
    x = torch.randint(128, (4, 32))
    # forgetting the label shift: y == x, the tied head already favours the input character
    leaked = F.cross_entropy(model(x).view(-1, 128), x.view(-1)).item()
    chk = check_first_loss(leaked, vocab_size=128)
    assert chk.verdict == "fail" and "not shifted" in chk.likely_cause


def test_large_init_is_caught():
    chk = check_first_loss(9.0, vocab_size=128)
    assert chk.verdict == "fail" and "initialise" in chk.likely_cause


def test_params_without_grad_names_the_unused_module():
    class WithSpare(CharLM):
        def __init__(self, cfg):
            super().__init__(cfg)
            self.spare = nn.Linear(4, 4)

    model = WithSpare(TINY_MODEL)
    model(torch.zeros(2, 8, dtype=torch.long)).sum().backward()
    chk = find_params_without_grad(model)
    assert chk.verdict == "fail" and chk.parameters == ("spare.weight", "spare.bias")
    model2 = CharLM(TINY_MODEL)
    model2(torch.zeros(2, 8, dtype=torch.long)).sum().backward()
    assert find_params_without_grad(model2).verdict == "ok"


def test_missing_zero_grad_is_caught_and_set_to_none_passes():
    model = CharLM(TINY_MODEL)
    model(torch.zeros(2, 8, dtype=torch.long)).sum().backward()
    assert find_stale_grads(model).verdict == "fail"
    model.zero_grad(set_to_none=True)
    assert find_stale_grads(model).verdict == "ok"


def test_nonfinite_guard_names_the_first_bad_module():
    model = CharLM(TINY_MODEL)
    with torch.no_grad():
        model.blocks[0].mlp.fc.weight[0, 0] = float("nan")
    found = locate_first_nonfinite(model, torch.zeros(2, 8, dtype=torch.long))
    assert found.module == "blocks.0.mlp.fc" and found.kind == "nan"
    clean = locate_first_nonfinite(CharLM(TINY_MODEL), torch.zeros(2, 8, dtype=torch.long))
    assert clean.module is None

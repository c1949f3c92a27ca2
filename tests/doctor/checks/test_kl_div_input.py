"""kl_div_not_log_probabilities (checks/loss_input.py): a distillation term that gives ``nn.KLDivLoss`` the
student's probabilities (the outside development program batch15/bugs/kd_kldiv_given_probabilities.py, from
https://github.com/sebastian-hofstaetter/matchmaker/issues/18) is named where the softmax was applied; the
student's log_softmax (as the loss expects) and a target given as log-probabilities with log_target=True are
silent."""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _distil(how: str) -> tuple[list, int]:
    torch.manual_seed(0)
    student, teacher = nn.Linear(8, 5), nn.Linear(8, 5)
    kl = nn.KLDivLoss(reduction="batchmean", log_target=how == "log_target")
    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    line = 0
    with watch(student, opt, steps=2) as w:
        for _ in range(3):
            x = torch.randn(16, 8)
            with torch.no_grad():
                t = teacher(x)
            s = student(x)
            line = inspect.currentframe().f_lineno + 2
            if how == "probabilities":
                loss = kl(F.softmax(s / 2, dim=-1), F.softmax(t / 2, dim=-1))
            elif how == "log_target":
                loss = kl(F.log_softmax(s / 2, dim=-1), F.log_softmax(t / 2, dim=-1))
            else:
                loss = kl(F.log_softmax(s / 2, dim=-1), F.softmax(t / 2, dim=-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "kl_div_not_log_probabilities"], line


def test_probabilities_into_kl_div_are_named_at_the_softmax():
    (f,), line = _distil("probabilities")
    assert f.line == line and f.evidence["input_from_softmax"] is True and f.evidence["input_max"] > 0


@pytest.mark.parametrize("how", ["log_probabilities", "log_target"])
def test_log_probabilities_into_kl_div_are_silent(how):
    assert _distil(how)[0] == []


@pytest.mark.parametrize("reduction", [None, "batchmean"])
def test_kl_div_left_at_its_mean_reduction_is_named_where_the_loss_was_built(reduction):
    # the outside development program batch16/bugs/kd_kldivloss_default_reduction.py: nn.KLDivLoss() divides by
    # the classes too (torch itself warns); reduction='batchmean' is the KL divergence per sample
    torch.manual_seed(0)
    student = nn.Linear(8, 5)
    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    with watch(student, opt, steps=2) as w:
        line = inspect.currentframe().f_lineno + 1
        kl = nn.KLDivLoss() if reduction is None else nn.KLDivLoss(reduction=reduction)
        for _ in range(3):
            x = torch.randn(16, 8)
            loss = kl(F.log_softmax(student(x), -1), F.softmax(torch.randn(16, 5), -1))
            opt.zero_grad()
            loss.backward()
            opt.step()
    found = [f for f in w.findings if f.check == "kl_div_mean_reduction"]
    if reduction == "batchmean":
        assert found == []
        return
    (f,) = found
    assert f.line == line and f.evidence["classes"] == 5

"""weights_on_reduced_loss (checks/sample_weights.py): co-teaching's small-loss gate multiplied into a
cross-entropy left at reduction='mean' (the outside development program batch16/bugs/coteaching_plus_scalar_ce_gate.py,
from https://github.com/xingruiyu/coteaching_plus/issues/1) is named at the loss call; the same gate on the per-sample
loss (reduction='none'), and a scalar weight on a reduced loss, are silent."""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _run(how: str) -> tuple[list, int]:
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    line = 0
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
            keep = (torch.rand(8) > 0.3).float()
            line = inspect.currentframe().f_lineno + 1
            ce = F.cross_entropy(model(x), y, reduction="none" if how == "per_sample" else "mean")
            loss = torch.sum(keep * ce) / 8 if how != "scalar_weight" else 0.5 * ce
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "weights_on_reduced_loss"], line


def test_a_per_sample_gate_on_a_mean_reduced_loss_is_named_at_the_loss_call():
    (f,), line = _run("reduced")
    assert f.line == line and f.evidence["batch"] == 8 and f.evidence["weights"] == 8


@pytest.mark.parametrize("how", ["per_sample", "scalar_weight"])
def test_a_gate_on_per_sample_losses_and_a_scalar_weight_are_silent(how):
    assert _run(how)[0] == []

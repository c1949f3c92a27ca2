"""future_values_seen (checks/perturb.py, FutureTokensSeen): a forecaster trained on the next value of a series
(the target is its input shifted by one step) must not change its early outputs when only later inputs change.
A TCN block that trims its padded convolution on the wrong side (the outside development program
batch16/bugs/tcn_next_step_forecaster.py, from https://github.com/locuslab/TCN/issues/8) is named at the trim; the
same block trimmed on the right side, and a model trained to reconstruct its input (no shift), are silent."""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


class Causal(nn.Module):
    def __init__(self, right_side: bool) -> None:
        super().__init__()
        self.right_side = right_side
        self.conv = nn.Conv1d(1, 8, 3, padding=2)
        self.head = nn.Conv1d(8, 1, 1)

    def forward(self, x):
        h = self.conv(x)
        h = h[:, :, :-2] if self.right_side else h[:, :, 2:]  # the trim
        return self.head(torch.relu(h))


def _run(right_side: bool, shifted: bool = True) -> list:
    torch.manual_seed(0)
    model = Causal(right_side)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            s = torch.randn(8, 1, 25).cumsum(-1)
            x, y = (s[..., :-1], s[..., 1:]) if shifted else (s[..., :-1], s[..., :-1])
            loss = F.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "future_values_seen"]


def test_a_convolution_trimmed_on_the_wrong_side_is_named_at_the_trim():
    (f,) = _run(right_side=False)
    lines, first = inspect.getsourcelines(Causal.forward)
    assert f.line == first + next(i for i, t in enumerate(lines) if "# the trim" in t)
    assert f.evidence == {"steps": 24, "changed_from": 12, "time_axis": 2}


@pytest.mark.parametrize(("right_side", "shifted"), [(True, True), (False, False)], ids=["causal", "reconstruction"])
def test_a_causal_forecaster_and_a_reconstruction_are_silent(right_side, shifted):
    assert _run(right_side, shifted) == []

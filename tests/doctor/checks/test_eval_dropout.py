"""dropout_active_in_eval (checks/eval_dropout.py): a functional dropout left at its default training=True (the
outside development program batch14/bugs/factorization_machine_functional_dropout_eval.py, from
https://github.com/rixwew/pytorch-fm/issues/21), against an nn.Dropout layer, F.dropout given
training=self.training, and Monte Carlo dropout written out on purpose (training=True); a drop path written by
hand without a self.training guard (batch15/bugs/vit_droppath_without_training_guard.py, from
https://github.com/WangFeng18/Swin-Transformer/issues/7) against the guarded one."""

from __future__ import annotations

import contextlib
import inspect

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


class Net(nn.Module):
    def __init__(self, how: str):
        super().__init__()
        self.how = how
        self.fc = nn.Linear(8, 16)
        self.drop = nn.Dropout(0.3)
        self.out = nn.Linear(16, 3)

    def forward(self, x):
        h = torch.relu(self.fc(x))
        if self.how == "default":
            h = F.dropout(h, p=0.3)  # dropout: default
        elif self.how == "flag":
            h = F.dropout(h, p=0.3, training=self.training)
        elif self.how == "mc":
            h = F.dropout(h, p=0.3, training=True)
        else:
            h = self.drop(h)
        return self.out(h)


def _run(how: str) -> list:
    torch.manual_seed(0)
    model = Net(how)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            loss = F.cross_entropy(model(torch.randn(16, 8)), torch.randint(0, 3, (16,)))
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    assert model.training and all(m.training for m in model.modules())  # the replay put every flag back
    return [f for f in w.findings if f.check == "dropout_active_in_eval"]


def test_a_functional_dropout_left_on_in_eval_is_found_at_its_call():
    (f,) = _run("default")
    lines, first = inspect.getsourcelines(Net.forward)
    assert f.line == first + next(i for i, t in enumerate(lines) if "# dropout: default" in t)
    assert f.evidence == {"p": 0.3}


@pytest.mark.parametrize("how", ["flag", "mc", "layer"])
def test_dropout_that_follows_the_mode_or_is_kept_on_in_writing_is_silent(how):
    assert _run(how) == []


class DropPath(nn.Module):
    def __init__(self, guarded: bool):
        super().__init__()
        self.guarded = guarded

    def forward(self, x):
        if self.guarded and not self.training:  # the guard
            return x
        mask = x.new_empty(x.shape[0], 1).bernoulli_(0.8)  # the draw
        return x * mask / 0.8


class Residual(nn.Module):
    def __init__(self, guarded: bool):
        super().__init__()
        self.fc, self.out, self.drop = nn.Linear(8, 8), nn.Linear(8, 3), DropPath(guarded)

    def forward(self, x):
        return self.out(x + self.drop(torch.relu(self.fc(x))))


@pytest.mark.parametrize("guarded", [False, True])
def test_a_drop_path_without_a_training_guard_is_named_where_the_guard_goes(guarded):
    torch.manual_seed(0)
    model = Residual(guarded)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            loss = F.cross_entropy(model(torch.randn(16, 8)), torch.randint(0, 3, (16,)))
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    found = [f for f in w.findings if f.check == "dropout_active_in_eval"]
    if guarded:
        assert found == []
        return
    (f,) = found
    lines, first = inspect.getsourcelines(DropPath.forward)
    assert f.line == first + next(i for i, t in enumerate(lines) if "# the guard" in t)
    assert f.evidence == {
        "draw_line": first + next(i for i, t in enumerate(lines) if "# the draw" in t),
        "keep_probability": 0.8,
    }


class Stateful(nn.Module):
    """A recurrent model that keeps its state as a plain attribute between calls (the outside development program
    batch14/bugs/lstm_forecaster_state_carried_across_shuffled_windows.py): a replay must not rebind it."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(4, 8, batch_first=True)
        self.out = nn.Linear(8, 1)
        self.state = None

    def forward(self, x):
        y, h = self.rnn(x, self.state)
        self.state = h.detach()
        return self.out(y)


def _stateful(watched: bool) -> torch.Tensor:
    torch.manual_seed(0)
    model = Stateful()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [torch.randn(6, 5, 4) for _ in range(3)]
    with watch(model, opt, steps=2) if watched else contextlib.nullcontext():
        for x in data:
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model.state


def test_the_replays_leave_a_state_kept_as_an_attribute_as_the_program_left_it():
    assert torch.equal(_stateful(watched=True), _stateful(watched=False))

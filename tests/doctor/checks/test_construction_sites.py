"""Where a module was built: the line that called its class, not the ``super().__init__()`` line of a class of the
user's own (findings name a layer's construction)."""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from expkit.doctor.findings import user_line_of  # noqa: E402
from expkit.doctor.probe import Probe  # noqa: E402


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)  # proj built


class Outer(Block):
    def __init__(self):
        super().__init__()


def test_a_user_class_is_placed_where_it_was_called_and_a_torch_layer_where_it_was_assigned():
    probe = Probe(watch_steps=1, sink=lambda event: None)
    probe.install()
    try:
        model = Outer()  # outer built
        act = nn.ReLU()  # relu built (a class without an __init__ of its own)
    finally:
        probe.finish()  # removes the hooks and restores anomaly mode
    here_lines, here_first = inspect.getsourcelines(
        test_a_user_class_is_placed_where_it_was_called_and_a_torch_layer_where_it_was_assigned
    )
    block_lines, block_first = inspect.getsourcelines(Block)
    assert user_line_of(probe.made_at[id(model)][1])[1] == here_first + next(
        i for i, t in enumerate(here_lines) if "# outer built" in t
    )
    assert user_line_of(probe.made_at[id(act)][1])[1] == here_first + next(
        i for i, t in enumerate(here_lines) if "# relu built" in t
    )
    assert user_line_of(probe.made_at[id(model.proj)][1])[1] == block_first + next(
        i for i, t in enumerate(block_lines) if "# proj built" in t
    )


def test_a_model_rebuilt_after_its_optimizer_is_named_at_the_rebuilding_statement():
    from expkit.doctor.checks.provenance import _parting_frame

    # innermost first, as raw_stack records them: the optimizer built at train.py:18, the model rebuilt at
    # train.py:20 through make() (train.py:14); both under the same runner frames
    runner = (("/usr/lib/python3/runpy.py", 88), ("/usr/lib/python3/runpy.py", 198))
    optimizer = (("/venv/torch/optim/adam.py", 40), ("train.py", 18), *runner)
    model = (("/venv/torch/nn/modules/container.py", 120), ("train.py", 14), ("train.py", 20), *runner)
    assert _parting_frame(optimizer, model) == ("train.py", 20)
    assert _parting_frame(optimizer, (("other.py", 3), *runner)) is None  # another file: no common scope


def _gan_with_a_discriminator_left_out() -> list:
    findings: list = []
    probe = Probe(watch_steps=2, sink=findings.append)  # armed from the start, as under `expkit doctor`
    probe.install()
    try:
        torch.manual_seed(0)
        gen = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8))
        d_a, d_b = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1)), nn.Linear(8, 1)
        opt_d = torch.optim.Adam(d_a.parameters(), lr=1e-3)  # d_b left out of the discriminators' optimizer
        opt_g = torch.optim.Adam(gen.parameters(), lr=1e-3)
        bce = nn.functional.binary_cross_entropy_with_logits
        for _ in range(3):
            real, fake = torch.randn(16, 8), gen(torch.randn(16, 4))
            scores = [(d(real), d(fake.detach())) for d in (d_a, d_b)]
            d_loss = sum(bce(r, torch.ones_like(r)) + bce(f, torch.zeros_like(f)) for r, f in scores)
            opt_d.zero_grad()
            d_loss.backward()
            opt_d.step()
            g_loss = sum(bce(d(fake), torch.ones(16, 1)) for d in (d_a, d_b))
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
    finally:
        probe.finish()
    return [e for e in findings if e.get("check") == "trainable_not_updated"]


def test_a_discriminator_left_out_is_named_at_the_optimizer_its_backward_was_for():
    # the generator's optimizer is built after the discriminators' one: the line is the optimizer that steps
    # after the backward that reached the stray parameters, not the last optimizer built
    lines, first = inspect.getsourcelines(_gan_with_a_discriminator_left_out)
    (f,) = _gan_with_a_discriminator_left_out()
    assert f["line"] == first + next(i for i, t in enumerate(lines) if "# d_b left out" in t)


def _bias_replaced_after_the_optimizer() -> list:
    """A matrix-factorisation model whose item bias is replaced by a new Parameter after the optimizer was built
    (the optimizer keeps the old one: batch 12's recommender program, torch forum "parameter replaced after
    optimizer" pattern)."""
    findings: list = []
    probe = Probe(watch_steps=2, sink=findings.append)
    probe.install()
    try:
        torch.manual_seed(0)
        users, items = nn.Embedding(10, 4), nn.Embedding(12, 4)
        model = nn.ModuleDict({"u": users, "i": items, "bias": nn.Embedding(12, 1)})
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        model["bias"].weight = nn.Parameter(torch.zeros(12, 1))  # replaced after the optimizer
        for _ in range(3):
            u, i = torch.randint(0, 10, (16,)), torch.randint(0, 12, (16,))
            pred = (model["u"](u) * model["i"](i)).sum(1) + model["bias"](i).squeeze(1)
            loss = nn.functional.mse_loss(pred, torch.randn(16))
            opt.zero_grad()
            loss.backward()
            opt.step()
    finally:
        probe.finish()
    return [e for e in findings if e.get("check") in ("trainable_not_updated", "param_not_in_optimizer")]


def test_a_parameter_replaced_after_the_optimizer_is_named_at_the_replacement():
    lines, first = inspect.getsourcelines(_bias_replaced_after_the_optimizer)
    found = _bias_replaced_after_the_optimizer()
    assert found and {f["line"] for f in found} == {
        first + next(i for i, t in enumerate(lines) if "# replaced after the optimizer" in t)
    }

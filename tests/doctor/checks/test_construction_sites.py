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

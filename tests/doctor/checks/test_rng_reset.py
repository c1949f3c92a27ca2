"""rng_reseeded_every_step: a global generator set back to the same state inside the training loop (a seed at the
top of every step, a saved state restored before every batch, a seed inside the batch helper), with the correct
twins that must stay silent: one seed before the loop, a seed per step (seed + step), a loop that draws nothing,
an evaluation that reseeds inside ``fork_rng`` or between a saved and a restored state."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of as _line_of  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402

CHECK = "rng_reseeded_every_step"
DATA = torch.linspace(-1, 1, 256).reshape(64, 4)


def _model(dropout: float = 0.2) -> nn.Module:
    return nn.Sequential(nn.Linear(5, 16), nn.Dropout(dropout), nn.ReLU(), nn.Linear(16, 4))


def _noisy_step(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    """One denoising step: a random minibatch, random timesteps and Gaussian noise."""
    idx = torch.randint(0, len(DATA), (16,))
    t = torch.rand(16, 1)
    eps = torch.randn(16, 4)
    xt = (1 - t) * DATA[idx] + t * eps
    loss = F.mse_loss(model(torch.cat([xt, t], 1)), eps)
    opt.zero_grad()
    loss.backward()
    opt.step()


def _evaluate(model: nn.Module) -> float:
    model.eval()
    with torch.no_grad():
        eps = torch.randn(32, 4)
        out = model(torch.cat([DATA[:32] + eps, torch.rand(32, 1)], 1))
    model.train()
    return float(F.mse_loss(out, eps))


def _found(w) -> list:
    assert not w.check_errors
    return [f for f in w.findings if f.check == CHECK]


def _seed_every_step():
    torch.manual_seed(0)
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for _ in range(4):
            torch.manual_seed(1234)  # seed: every step
            _noisy_step(model, opt)
    return w


def test_a_seed_at_the_top_of_every_step_is_found_at_its_line_by_step_two():
    (f,) = _found(_seed_every_step())
    assert f.file == __file__ and f.line == _line_of("# seed: every step", _seed_every_step)
    assert f.step == 2
    assert f.evidence["reseed_call"] == "torch.manual_seed(1234)" and f.evidence["generator"] == "cpu"


def _restore_every_step(save_inside_watch: bool):
    torch.manual_seed(0)
    model = _model(dropout=0.5)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 5), torch.randn(16, 4)
    init = torch.random.get_rng_state()
    with watch(model, opt, steps=2) as w:
        if save_inside_watch:
            torch.randn(3)  # draws between the watch's start and the save
            init = torch.random.get_rng_state()
        for _ in range(4):
            torch.random.set_rng_state(init)  # restore: every step
            loss = F.mse_loss(model(x), y)  # the only randomness: the dropout mask
            opt.zero_grad()
            loss.backward()
            opt.step()
    return w


@pytest.mark.parametrize("save_inside_watch", [False, True])
def test_a_saved_state_restored_before_every_batch_is_found_at_the_restore(save_inside_watch):
    (f,) = _found(_restore_every_step(save_inside_watch))
    assert f.file == __file__ and f.line == _line_of("# restore: every step", _restore_every_step)
    assert f.step == 2 and f.evidence["reseed_call"] == "torch.random.set_rng_state(...)"


def _batch_with_seed(step: int) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(7)  # seed: in the batch helper
    idx = torch.randperm(len(DATA))[:16]
    x = DATA[idx] + 0.1 * torch.randn(16, 4)  # augmentation noise
    return torch.cat([x, torch.full((16, 1), float(step))], 1), DATA[idx]


def test_a_seed_inside_the_batch_helper_with_an_evaluation_that_forks_is_found():
    torch.manual_seed(0)
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        for step in range(4):
            x, y = _batch_with_seed(step)
            loss = F.mse_loss(model(x), y)
            with torch.random.fork_rng(devices=[]):  # an evaluation between the draws and the step
                torch.manual_seed(0)
                _evaluate(model)
            opt.zero_grad()
            loss.backward()
            opt.step()
    (f,) = _found(w)
    assert f.file == __file__ and f.line == _line_of("# seed: in the batch helper", _batch_with_seed)


def _clean(loop) -> list:
    torch.manual_seed(0)
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=3) as w:
        loop(model, opt)
    return _found(w)


def test_one_seed_before_the_loop_is_silent():
    def loop(model, opt):
        torch.manual_seed(1234)
        for _ in range(4):
            _noisy_step(model, opt)

    assert _clean(loop) == []


def test_a_different_seed_every_step_is_silent():
    def loop(model, opt):
        for step in range(4):
            torch.manual_seed(1234 + step)
            _noisy_step(model, opt)

    assert _clean(loop) == []


def test_a_loop_that_draws_nothing_is_silent_though_it_seeds_every_step():
    def loop(model, opt):
        model.eval()  # no dropout
        x, y = torch.ones(8, 5), torch.zeros(8, 4)
        for _ in range(4):
            torch.manual_seed(0)
            loss = F.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()

    assert _clean(loop) == []


def test_an_evaluation_seeded_inside_fork_rng_every_step_is_silent():
    def loop(model, opt):
        for _ in range(4):
            _noisy_step(model, opt)
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(0)  # the same evaluation noise every time, training untouched
                _evaluate(model)

    assert _clean(loop) == []


def test_an_evaluation_seeded_between_a_saved_and_restored_state_is_silent():
    def loop(model, opt):
        for _ in range(4):
            saved = torch.get_rng_state()
            torch.manual_seed(0)
            _evaluate(model)
            torch.set_rng_state(saved)
            _noisy_step(model, opt)

    assert _clean(loop) == []


def test_an_evaluation_that_forks_in_a_loop_without_training_randomness_is_silent():
    def loop(model, opt):
        x, y = torch.ones(8, 5), torch.zeros(8, 4)
        for _ in range(4):
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(0)
                _evaluate(model)  # draws, but the training below draws nothing
            model.eval()
            loss = F.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()

    assert _clean(loop) == []


def test_activation_checkpointing_that_replays_the_forward_dropout_is_silent():
    from torch.utils.checkpoint import checkpoint

    def loop(model, opt):
        for _ in range(4):  # the backward sets the generator back to the forward's state to recompute its dropout
            x = torch.randn(8, 5, requires_grad=True)
            loss = checkpoint(model, x, use_reentrant=True).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

    assert _clean(loop) == []

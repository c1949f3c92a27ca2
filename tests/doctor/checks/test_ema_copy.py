"""ema_copy_partial: a momentum/EMA copy of the trained weights that follows only part of them over a step, beside
copies that follow as a whole (a hand-written EMA, torch's AveragedModel) and one that never moves (a frozen
reference model)."""

from __future__ import annotations

import copy
import inspect

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of as _line_of  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _student():
    return nn.ModuleDict({"encoder": nn.Sequential(nn.Linear(8, 16), nn.ReLU()), "head": nn.Linear(16, 4)})


def _run(how: str):
    torch.manual_seed(0)
    student = _student()
    if how == "averaged":
        teacher = torch.optim.swa_utils.AveragedModel(
            student, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(0.99)
        )
    else:
        teacher = copy.deepcopy(student)
        teacher.requires_grad_(False)
    opt = torch.optim.SGD(student.parameters(), lr=0.1, momentum=0.9)

    def fwd(m, x):
        return m["head"](m["encoder"](x))

    with watch(steps=2) as w:
        for _ in range(3):
            x = torch.randn(16, 8)
            with torch.no_grad():
                if how == "encoder_only":
                    pairs = zip(student["encoder"].parameters(), teacher["encoder"].parameters(), strict=True)
                elif how in ("whole", "frozen_reference"):
                    pairs = zip(student.parameters(), teacher.parameters(), strict=True)
                else:
                    pairs = iter(())
                for ps, pt in pairs:
                    if how != "frozen_reference":
                        pt.mul_(0.99).add_(ps, alpha=0.01)
                target = teacher.module if how == "averaged" else teacher
                soft = F.softmax(fwd(target, x), dim=1)
            logits = fwd(student, x)
            loss = F.cross_entropy(logits, torch.randint(0, 4, (16,))) + F.cross_entropy(logits, soft)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if how == "averaged":
                teacher.update_parameters(student)
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "ema_copy_partial"]


def test_an_ema_that_updates_the_encoder_and_leaves_the_head_is_found():
    (f,) = _run("encoder_only")
    assert f.evidence["copies_left_behind"] == 2 and f.evidence["copies_following"] == 2
    assert f.evidence["left_behind"] == ["weight", "bias"]  # the head (its own top-level module here)


@pytest.mark.parametrize("how", ["whole", "averaged", "frozen_reference"])
def test_whole_copies_and_a_frozen_reference_are_silent(how):
    assert _run(how) == []


# ema_decay_swapped: the share of the way to the trained weights that the copy moves in one step is 1 - decay.
# levanter#883 (https://github.com/marin-community/levanter/pull/883): the EMA kept 1 - beta of itself.


def _averaged_copy(update: str):
    """A model trained for 3 steps beside an EMA copy that never runs a forward while watched; returns the
    ema_decay_swapped findings and the line of the update."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 1))
    ema = copy.deepcopy(model).requires_grad_(False)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    line = 0
    with watch(steps=2) as w:
        for step in range(3):
            loss = F.mse_loss(model(torch.randn(32, 6)), torch.randn(32, 1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                for pe, pm in zip(ema.parameters(), model.parameters(), strict=True):
                    if update == "swapped":
                        line = _lineno() + 1
                        pe.copy_(0.001 * pe + 0.999 * pm)
                    elif update == "swapped_through_data":
                        line = _lineno() + 1
                        pe.data.mul_(0.001).add_(pm.data, alpha=0.999)
                    elif update == "right":
                        pe.lerp_(pm, 0.001)
                    elif update == "warmup":  # diffusers' EMAModel warm-up: decay (1 + step) / (10 + step)
                        decay = (1 + step) / (10 + step)
                        pe.mul_(decay).add_(pm, alpha=1 - decay)
                    elif update == "hard_sync":  # a DQN target network copied at every step
                        pe.copy_(pm)
                if update == "sparse_beside":  # an in-place op on a tensor without storage in the window
                    sparse = torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 0]]), torch.tensor([1.0, 2.0]), (2, 2))
                    sparse.mul_(2.0)
                    for pe, pm in zip(ema.parameters(), model.parameters(), strict=True):
                        pe.lerp_(pm, 0.001)
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "ema_decay_swapped"], line


def _lineno() -> int:
    import sys

    return sys._getframe(1).f_lineno


@pytest.mark.parametrize("update", ["swapped", "swapped_through_data"])
def test_an_ema_with_decay_and_one_minus_decay_swapped_is_found_at_its_update(update):
    found, line = _averaged_copy(update)
    (f,) = found
    assert f.evidence["share_moved_per_step"] == pytest.approx(0.999, abs=1e-3)
    assert f.line == line


@pytest.mark.parametrize("update", ["right", "warmup", "hard_sync", "none", "sparse_beside"])
def test_a_slow_average_a_warm_up_and_a_hard_sync_are_silent(update):
    assert _averaged_copy(update)[0] == []


@pytest.mark.parametrize("how", ["params_only", "with_buffers", "frozen"])
def test_an_ema_copy_whose_batch_norm_statistics_never_move_is_found(how):
    # the outside development program batch14/bugs/ema_teacher_batchnorm_buffers_stale.py (from
    # https://github.com/FlyreelAI/sesemi/issues/36): the EMA update walks parameters() only, so the copy's
    # running_mean/var keep the values of its construction; buffers copied too, or a frozen copy, are silent
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 3))
    ema = copy.deepcopy(model)
    for p in ema.parameters():
        p.requires_grad_(False)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            loss = F.cross_entropy(model(torch.randn(32, 6) * 3 + 2), torch.randint(0, 3, (32,)))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if how == "frozen":
                continue
            with torch.no_grad():
                for e, p in zip(ema.parameters(), model.parameters(), strict=True):
                    e.mul_(0.99).add_(p, alpha=0.01)  # the update
                if how == "with_buffers":
                    for e, b in zip(ema.buffers(), model.buffers(), strict=True):
                        e.copy_(b)
    assert not w.check_errors, w.check_errors
    found = [f for f in w.findings if f.check == "ema_buffers_stale"]
    if how != "params_only":
        assert found == []
    else:
        (f,) = found
        assert f.evidence["buffers"] == ["1.running_mean", "1.running_var"]
        lines, first = inspect.getsourcelines(test_an_ema_copy_whose_batch_norm_statistics_never_move_is_found)
        assert f.line == first + next(i for i, t in enumerate(lines) if "# the update" in t)


def _shadow_list(update: str):
    """An EMA kept as a plain list of tensors by a helper class (no module), as diffusion code writes it; returns
    the ema_moves_away and ema_decay_swapped findings and the line of the update."""

    class Shadow:
        def __init__(self, params, decay):
            self.decay, self.shadow = decay, [p.detach().clone() for p in params]

        @torch.no_grad()
        def update(self, params):
            for s, p in zip(self.shadow, params, strict=True):
                if update == "away":
                    s.add_((s - p) * (1 - self.decay))  # the update
                elif update == "right":
                    s.add_((p - s) * (1 - self.decay))
                elif update == "swapped":
                    s.lerp_(p, self.decay)

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    with watch(steps=2) as w:
        shadow = Shadow(model.parameters(), 0.99)
        for _ in range(3):
            loss = F.mse_loss(model(torch.randn(32, 6)), torch.randn(32, 1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            shadow.update(model.parameters())
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check in ("ema_moves_away", "ema_decay_swapped")]


def test_an_ema_list_whose_update_moves_away_from_the_model_is_found_at_its_update():
    # the outside development program batch19/bugs/denoiser_training_with_ema_helper.py (from
    # https://github.com/ostris/ai-toolkit/issues/1034): shadow + (1 - decay) * (shadow - param), the sign reversed
    (f,) = _shadow_list("away")
    assert f.check == "ema_moves_away" and f.line == _line_of("# the update", _shadow_list)
    assert f.evidence["share_moved_per_step"] == pytest.approx(-0.01, rel=1e-3)
    (f,) = _shadow_list("swapped")  # a plain list is measured for the swapped decay too
    assert f.check == "ema_decay_swapped"
    assert _shadow_list("right") == []

"""weights_changed_outside_step: weights an optimizer holds that change between its steps without it. A
re-initialisation inside the loop is found at its ``apply`` line; SAM's two passes, which move the weights to
w + e and back under no_grad (equal to rounding, not bitwise), are correct and stay silent, and so do weights only
pulled toward zero after the step (WGAN's clipping, outside clean program batch17/clean/
wgan_weight_clipping_rmsprop_mixture.py from https://github.com/jiamings/wgan/issues/2; weight decay by hand)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of as _line_of  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402

CHECK = "weights_changed_outside_step"


def _init(m):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, std=0.5)


def _train(how: str):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            x, y = torch.randn(16, 10), torch.randint(0, 3, (16,))
            if how == "reinit":
                model.apply(_init)  # the re-initialisation
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            if how == "sam":  # arXiv:2010.01412: ascend to w + e, take the gradient there, come back
                with torch.no_grad():
                    norm = torch.norm(torch.stack([p.grad.norm() for p in model.parameters()]))
                    eps = [0.5 * p.grad / (norm + 1e-12) for p in model.parameters()]
                    for p, e in zip(model.parameters(), eps, strict=True):
                        p.add_(e)
                opt.zero_grad()
                F.cross_entropy(model(x), y).backward()
                with torch.no_grad():
                    for p, e in zip(model.parameters(), eps, strict=True):
                        p.sub_(e)
            opt.step()
            if how in ("clamp", "decay"):  # WGAN's weight clipping (arXiv:1701.07875), weight decay by hand
                with torch.no_grad():
                    for p in model.parameters():
                        p.clamp_(-0.05, 0.05) if how == "clamp" else p.mul_(0.99)
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == CHECK]


def test_a_reinitialisation_inside_the_loop_is_found_at_the_apply_line():
    (f,) = _train("reinit")
    assert f.line == _line_of("# the re-initialisation", _train)


@pytest.mark.parametrize("how", ["plain", "sam", "clamp", "decay"])
def test_plain_steps_and_sams_move_and_restore_are_silent(how):
    assert _train(how) == []

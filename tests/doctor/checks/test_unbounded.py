"""loss_unbounded_in_parameter: learned task weights with no regulariser (batch 5's dev program, written from a
public report), written two ways, and the bounded forms that must stay silent: uncertainty weighting
(exp(-s) * loss + s), softmax-normalised weights, a learned logit scale."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _loop(how: str):
    torch.manual_seed(0)
    trunk, reg, cls = nn.Sequential(nn.Linear(6, 16), nn.ReLU()), nn.Linear(16, 1), nn.Linear(16, 3)
    w = nn.Parameter(torch.ones(2))
    opt = torch.optim.Adam([*trunk.parameters(), *reg.parameters(), *cls.parameters(), w], lr=1e-2)
    with watch(steps=2) as found:
        for _ in range(3):
            x = torch.randn(32, 6)
            h = trunk(x)
            losses = torch.stack([F.mse_loss(reg(h), x[:, :1]), F.cross_entropy(cls(h), (x[:, 1] > 0).long())])
            if how == "product":
                loss = (w * losses).sum()  # combined: product
            elif how == "dot":
                loss = torch.dot(losses, w)  # combined: dot
            elif how == "uncertainty":
                loss = (torch.exp(-w) * losses + w).sum()
            elif how == "softmax":
                loss = (torch.softmax(w, 0) * losses).sum()
            else:  # a learned logit scale
                loss = F.cross_entropy(cls(h) * w[0].exp(), (x[:, 1] > 0).long())
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert found.done and not found.check_errors, found.check_errors
    return [f for f in found.findings if f.check == "loss_unbounded_in_parameter"]


@pytest.mark.parametrize("how", ["product", "dot"])
def test_task_weights_with_no_regulariser_are_found_where_they_meet_the_loss(how):
    (f,) = _loop(how)
    assert f.line == line_of(f"# combined: {how}", _loop)
    assert f.evidence["elements"] == 2


@pytest.mark.parametrize("how", ["uncertainty", "softmax", "scale"])
def test_bounded_forms_are_clean(how):
    assert _loop(how) == []


def test_a_generator_forwarded_before_the_discriminator_step_is_a_module_not_a_loose_tensor():
    # the generator ran before the discriminator's step (which starts a new step): its parameters are a
    # module's, not loss-level weights
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16))
    D = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
    opt_g, opt_d = torch.optim.Adam(G.parameters(), lr=2e-4), torch.optim.Adam(D.parameters(), lr=2e-4)
    bce = nn.BCEWithLogitsLoss()
    with watch(G, opt_g, steps=2) as w:
        for _ in range(3):
            real = torch.randn(32, 16) + 2.0
            fake = G(real)
            opt_d.zero_grad()
            (bce(D(real), torch.ones(32, 1)) + bce(D(fake.detach()), torch.zeros(32, 1))).backward()
            opt_d.step()
            opt_g.zero_grad()
            # only the L1 term reaches G (its adversarial term detached: another check's bug): L1 is linear in
            # G's output bias, whose gradient then has one sign
            (bce(D(fake.detach()), torch.ones(32, 1)) + 10 * nn.functional.l1_loss(fake, real)).backward()
            opt_g.step()
    assert not w.check_errors
    assert [f for f in w.findings if f.check == "loss_unbounded_in_parameter"] == []

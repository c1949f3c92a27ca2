"""loss_target_carries_gradient: a loss whose target requires grad and reaches parameters of its own that the
optimizer training the input also steps (a jointly trained teacher not detached), written several ways, and the
correct twins (detached, no_grad, EMA teacher, two optimizers of a GAN, one model on both sides) that must stay
silent."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of as _line_of  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402

CHECK = "loss_target_carries_gradient"


def _found(w):
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == CHECK]


def _kd(how: str):
    torch.manual_seed(0)
    enc = nn.Sequential(nn.Linear(12, 32), nn.ReLU())
    teacher = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 5))
    student = nn.Linear(32, 5)
    model = nn.ModuleList([enc, teacher, student])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ema = copy.deepcopy(teacher).requires_grad_(False)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            x, y = torch.randn(16, 12), torch.randint(0, 5, (16,))
            h = enc(x)
            t_logits, s_logits = teacher(h), student(h)
            if how == "kl_div":
                t_probs = F.softmax(t_logits / 2.0, dim=-1)  # target: kl
                kd = F.kl_div(F.log_softmax(s_logits / 2.0, dim=-1), t_probs, reduction="batchmean")
            elif how == "soft_ce":
                soft = t_logits.softmax(-1)  # target: soft ce
                kd = F.cross_entropy(s_logits, soft)
            elif how == "mse_features":
                t_feat = teacher[0](h)  # target: mse
                kd = F.mse_loss(student(h) @ torch.ones(5, 32) * 0.1, t_feat)
            elif how == "hand_kl":
                p = torch.softmax(t_logits, -1)  # target: hand kl
                kd = (p * (p.log() - F.log_softmax(s_logits, -1))).sum(-1).mean()
            elif how == "detached":
                kd = F.kl_div(F.log_softmax(s_logits, -1), F.softmax(t_logits, -1).detach(), reduction="batchmean")
            elif how == "no_grad":
                with torch.no_grad():
                    t_probs = F.softmax(teacher(h), dim=-1)
                kd = -(t_probs * F.log_softmax(s_logits, -1)).sum(-1).mean()
            elif how == "ema":
                t_probs = F.softmax(ema(h), dim=-1)  # EMA teacher: no optimizer holds it
                kd = -(t_probs * F.log_softmax(s_logits, -1)).sum(-1).mean()
            elif how == "entropy":
                p = F.softmax(s_logits, -1)  # same logits on both sides: an entropy term
                kd = (p * F.log_softmax(s_logits, -1)).sum(-1).mean()
            else:  # consistency between two views of one model (Pi-model / VICReg invariance)
                kd = F.mse_loss(student(h + 0.1 * torch.randn_like(h)), student(h))
            loss = F.cross_entropy(t_logits, y) + F.cross_entropy(s_logits, y) + kd
            opt.zero_grad()
            loss.backward()
            opt.step()
    return _found(w)


@pytest.mark.parametrize(
    ("how", "marker"),
    [
        ("kl_div", "# target: kl"),
        ("soft_ce", "# target: soft ce"),
        ("mse_features", "# target: mse"),
        ("hand_kl", "# target: hand kl"),
    ],
)
def test_undetached_jointly_trained_target_is_found_where_it_was_made(how, marker):
    found = _found_lines(how)
    assert _line_of(marker, _kd) in found, found


def _found_lines(how):
    return {f.line for f in _kd(how)}


@pytest.mark.parametrize("how", ["detached", "no_grad", "ema", "entropy", "consistency"])
def test_detached_or_untrained_or_same_model_targets_are_clean(how):
    assert _kd(how) == []


def test_gan_feature_matching_with_two_optimizers_is_clean():
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8))
    D_feat = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
    D_head = nn.Linear(16, 1)
    D = nn.ModuleList([D_feat, D_head])
    opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
    opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
    with watch(G, opt_g, steps=2) as w:
        for _ in range(3):
            real, z = torch.randn(16, 8), torch.randn(16, 4)
            fake = G(z)
            d_loss = F.binary_cross_entropy_with_logits(
                D_head(D_feat(real)), torch.ones(16, 1)
            ) + F.binary_cross_entropy_with_logits(D_head(D_feat(fake.detach())), torch.zeros(16, 1))
            opt_d.zero_grad()
            d_loss.backward()
            opt_d.step()
            # feature matching: the real features' graph reaches D, which opt_g does not hold
            g_loss = F.mse_loss(D_feat(fake).mean(0), D_feat(real).mean(0))
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
    assert _found(w) == []


def test_teacher_target_under_a_separate_optimizer_is_clean():
    """Two models, each stepped by its own optimizer: the target's parameters are not the input's optimizer's."""
    torch.manual_seed(0)
    a, b = nn.Linear(6, 3), nn.Linear(6, 3)
    opt_a = torch.optim.SGD(a.parameters(), lr=0.1)
    opt_b = torch.optim.SGD(b.parameters(), lr=0.1)
    with watch(a, opt_a, steps=2) as w:
        for _ in range(3):
            x = torch.randn(8, 6)
            loss_a = F.mse_loss(a(x), b(x))
            opt_a.zero_grad()
            opt_b.zero_grad()
            loss_a.backward()
            opt_a.step()
            opt_b.zero_grad()
            F.mse_loss(b(x), torch.zeros(8, 3)).backward()
            opt_b.step()
    assert _found(w) == []


def test_mixture_of_experts_gates_weighting_log_probabilities_are_clean():
    """gates (B, E, 1) * log-probabilities (B, E, C): the softmax is a weighting, not a target distribution."""
    torch.manual_seed(0)
    gate, experts = nn.Linear(6, 3), nn.Linear(6, 3 * 4)
    model = nn.ModuleList([gate, experts])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            x, y = torch.randn(8, 6), F.one_hot(torch.randint(0, 4, (8,)), 4).float()
            g = F.softmax(gate(x), -1).unsqueeze(-1)
            logp = F.log_softmax(experts(x).view(8, 3, 4), -1)
            loss = -((g * logp).sum(1) * y).sum(-1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert _found(w) == []


def _actor_critic(detach: bool):
    torch.manual_seed(0)
    actor, critic = nn.Linear(6, 3), nn.Linear(6, 1)
    opt = torch.optim.Adam([*actor.parameters(), *critic.parameters()], lr=1e-3)
    with watch(steps=2) as w:
        for _ in range(3):
            state = torch.randn(32, 6)
            dist = torch.distributions.Categorical(logits=actor(state))
            action = dist.sample()
            reward = (action == state[:, :3].argmax(1)).float()
            value = critic(state).squeeze(1)
            advantage = reward - (value.detach() if detach else value)  # the advantage
            loss = -(advantage * dist.log_prob(action)).mean() + (reward - value).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return w


def test_a_policy_gradient_weighted_by_an_undetached_critic_value_is_found_at_the_advantage():
    # pattern of the actor-critic reports in tests/doctor/outside/batch5 (advantage = reward - value)
    (f,) = _found(_actor_critic(detach=False))
    assert f.line == _line_of("# the advantage", _actor_critic)
    assert "policy gradient" in f.evidence["loss"]


def test_a_policy_gradient_with_a_detached_advantage_is_silent():
    assert _found(_actor_critic(detach=True)) == []

"""first_loss judged on the logits, not the loss alone: a margin head (ArcFace's additive angular margin, written
from the paper, arXiv 1801.07698) lowers the target's own logit from the labels and starts far above ln C with
near-uniform logits, and is silent; so is a cosine head whose scale (its temperature) is large on purpose; a plain
head's logits scaled far up are found. The train/eval modes measured on the run: an
eval() network whose output a backward reaches is part of training (a frozen perceptual-loss network kept in
eval() on purpose is silent, a trained model left in eval() is found), and an eval() forward that no backward
reaches keeps its graph for nothing."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _checks(w) -> list[str]:
    assert w.done and not w.check_errors, w.check_errors
    return [f.check for f in w.findings if f.kind == "bug"]


class MarginHead(nn.Module):
    def __init__(self, dim: int, classes: int, scale: float, margin: float) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(classes, dim) * 0.01)
        self.scale, self.margin = scale, margin

    def forward(self, z, y):
        cos = F.linear(F.normalize(z), F.normalize(self.w)).clamp(-1 + 1e-7, 1 - 1e-7)
        target = torch.cos(torch.acos(cos) + self.margin)  # the angle of the target class grows by the margin
        return self.scale * torch.where(F.one_hot(y, cos.shape[1]).bool(), target, cos)


def _first_loss(margin: float, scale: float = 16.0) -> list[str]:
    torch.manual_seed(0)
    encoder, head = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64)), MarginHead(64, 20, scale, margin)
    opt = torch.optim.SGD([*encoder.parameters(), *head.parameters()], lr=0.05)
    with watch(encoder, opt, steps=2) as w:
        for _ in range(3):
            x, y = torch.randn(128, 32), torch.randint(0, 20, (128,))
            loss = F.cross_entropy(head(encoder(x), y), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return _checks(w)


def test_a_margin_head_starts_far_above_ln_c_with_near_uniform_logits_and_is_silent():
    # the margin costs the target s * (1 - cos m)-ish nats at the start: > 2 nats above ln 20 here
    torch.manual_seed(0)
    z, y = torch.randn(128, 64), torch.randint(0, 20, (128,))
    with torch.no_grad():
        start = float(F.cross_entropy(MarginHead(64, 20, 16.0, 0.5)(z, y), y))
    assert start - math.log(20) > 2.0
    assert "first_loss" not in _first_loss(margin=0.5)


def test_a_cosine_head_with_a_large_scale_is_silent():
    # CosFace-style: normalised embeddings and class vectors, scale 30 (the paper uses 64): logits bounded by s, a
    # temperature chosen large on purpose, far above ln C at the start with or without a margin
    assert "first_loss" not in _first_loss(margin=0.0, scale=400.0)
    assert "first_loss" not in _first_loss(margin=0.35, scale=400.0)


def _plain(scale: float) -> list[str]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 20))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            x, y = torch.randn(128, 32), torch.randint(0, 20, (128,))
            loss = F.cross_entropy(model(x) * scale, y)  # the logits' scale
            opt.zero_grad()
            loss.backward()
            opt.step()
    return _checks(w)


def test_a_plain_head_whose_logits_are_scaled_far_up_is_found():
    assert "first_loss" in _plain(50.0)
    assert "first_loss" not in _plain(1.0)


def _perceptual(model_in_eval: bool) -> list[str]:
    torch.manual_seed(0)
    ae = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 1, 3, padding=1))
    feat = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU()).requires_grad_(False).eval()
    opt = torch.optim.Adam(ae.parameters(), lr=1e-3)
    if model_in_eval:
        ae.eval()  # the slip: the trained model left in eval()
    with watch(ae, opt, steps=2) as w:
        for _ in range(3):
            clean = torch.rand(8, 1, 12, 12)
            out = ae(clean + 0.3 * torch.randn_like(clean))
            # the frozen network runs twice before the backward: on the output, and on the target
            loss = F.mse_loss(out, clean) + F.mse_loss(feat(out), feat(clean))
            opt.zero_grad()
            loss.backward()
            opt.step()
    return _checks(w)


def test_a_frozen_loss_network_in_eval_run_twice_before_the_backward_is_silent():
    found = _perceptual(model_in_eval=False)
    assert "eval_keeps_graph" not in found and "train_in_eval_mode" not in found


def test_the_trained_model_left_in_eval_is_still_found_beside_a_frozen_loss_network():
    assert "train_in_eval_mode" in _perceptual(model_in_eval=True)


def test_an_eval_forward_no_backward_reaches_is_found_even_when_a_training_forward_follows_it():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.2), nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            model.eval()
            model(torch.randn(4, 8))  # a validation batch, grad on, its output dropped
            model.train()
            loss = F.cross_entropy(model(torch.randn(16, 8)), torch.randint(0, 3, (16,)))
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert "eval_keeps_graph" in _checks(w)

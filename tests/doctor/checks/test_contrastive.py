"""contrastive_target_off_positive: an InfoNCE cross-entropy whose positive index points away from the column
each row singles out (two views of one sample are near each other from the first step), beside the same losses
indexed right and classifiers whose logits favour few classes or none."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402

N, TAU = 16, 0.2


def _views():
    x = torch.randn(N, 32)
    return x + 0.1 * torch.randn_like(x), x + 0.1 * torch.randn_like(x)


def _simclr(right: bool):
    torch.manual_seed(0)
    encoder = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 16))
    opt = torch.optim.Adam(encoder.parameters(), lr=1e-3)
    with watch(encoder, opt, steps=2) as w:
        for _ in range(3):
            v1, v2 = _views()
            z = F.normalize(encoder(torch.cat([v1, v2])), dim=1)
            sim = (z @ z.t() / TAU).masked_fill(torch.eye(2 * N, dtype=torch.bool), float("-inf"))
            pos = (torch.arange(2 * N) + N) % (2 * N) if right else torch.arange(2 * N) ^ 1  # the positive index
            loss = F.cross_entropy(sim, pos)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "contrastive_target_off_positive"]


def _paired(right: bool):
    """Two views scored against each other (N x N, positives on the diagonal), given MoCo's all-zero targets."""
    torch.manual_seed(0)
    encoder = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 16))
    opt = torch.optim.Adam(encoder.parameters(), lr=1e-3)
    with watch(encoder, opt, steps=2) as w:
        for _ in range(3):
            v1, v2 = _views()
            logits = F.normalize(encoder(v1), dim=1) @ F.normalize(encoder(v2), dim=1).t() / TAU
            labels = torch.arange(N) if right else torch.zeros(N, dtype=torch.long)  # the labels
            loss = F.cross_entropy(logits, labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "contrastive_target_off_positive"]


def test_a_positive_index_for_interleaved_views_on_concatenated_ones_is_found_at_the_index():
    (f,) = _simclr(right=False)
    assert f.line == line_of("# the positive index", _simclr) and f.evidence["targets_at_that_column"] <= 0.2
    assert _simclr(right=True) == []


def test_all_zero_targets_on_a_diagonal_layout_are_found_and_the_diagonal_is_not():
    (f,) = _paired(right=False)
    assert f.line == line_of("# the labels", _paired)
    assert _paired(right=True) == []


@pytest.mark.parametrize("confident", [False, True])
def test_classifiers_are_not_judged(confident):
    # a head over many classes: at init no clear favourite; made confident, a few favourite classes for all rows
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 40))
    if confident:
        with torch.no_grad():
            model[2].bias[:3] += 8.0
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            loss = F.cross_entropy(model(torch.randn(32, 32)), torch.randint(0, 40, (32,)))
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    assert not [f for f in w.findings if f.check == "contrastive_target_off_positive"]

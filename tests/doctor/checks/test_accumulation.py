"""accumulation_not_scaled: k DataLoader micro-batches backpropagating their mean loss undivided."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _accumulate(*, divide: bool, accum: int = 4):
    torch.manual_seed(0)
    X, y = torch.randn(256, 8), torch.randint(0, 3, (256,))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=16)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        for i, (xb, yb) in enumerate(loader):
            loss = nn.functional.cross_entropy(model(xb), yb)
            (loss / accum if divide else loss).backward()
            if (i + 1) % accum == 0:
                opt.step()
                opt.zero_grad()
            if w.done:
                break
    assert not w.check_errors
    return [f for f in w.findings if f.check == "accumulation_not_scaled"]


def test_undivided_accumulation_is_found_with_the_gradient_ratio():
    (f,) = _accumulate(divide=False)
    assert f.evidence["micro_batches"] == 4
    assert f.evidence["backward_value_over_loss_value"] == pytest.approx(1.0)
    # four micro-batches of one init: their gradients mostly agree, so the sum is 1-4x the first one's norm
    assert 1.0 < f.evidence["step_over_micro_batch_grad_norm"] <= 4.0


def test_divided_accumulation_is_clean():
    assert _accumulate(divide=True) == []


def test_two_backwards_on_one_batch_are_not_accumulation():
    # a GAN discriminator step: a real and a fake term, each backpropagated, one batch drawn
    torch.manual_seed(0)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 2)), batch_size=16)
    D = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.SGD(D.parameters(), lr=0.1)
    bce = nn.BCEWithLogitsLoss()
    with watch(D, opt, steps=2) as w:
        for (xb,) in loader:
            opt.zero_grad()
            bce(D(xb), torch.ones(len(xb), 1)).backward()
            bce(D(torch.randn(len(xb), 2)), torch.zeros(len(xb), 1)).backward()
            opt.step()
    assert [f.check for f in w.findings] == []

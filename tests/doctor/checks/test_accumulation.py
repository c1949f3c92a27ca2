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


def _sliced(how: str, accum: int = 4):
    """Micro-batches sliced from one data tensor (e2e_sae#70), no DataLoader."""
    torch.manual_seed(0)
    X = torch.randn(128, 12)
    Y = X[:, :3].sum(1, keepdim=True)
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    with watch(model, opt, steps=2) as w:
        for i in range(0, 128, 4):
            xb, yb = X[i : i + 4], Y[i : i + 4]
            loss = nn.functional.mse_loss(model(xb), yb)
            if how == "undivided":
                loss.backward()  # each micro-batch's mean, undivided
            elif how == "divided":
                (loss / accum).backward()
            elif how == "same_slice_twice":  # two passes on one slice (SAM's two backwards), then a step each
                loss.backward()
                opt.step()
                opt.zero_grad()
                nn.functional.mse_loss(model(xb), yb).backward()
            if how == "same_slice_twice" or (i // 4 + 1) % accum == 0:
                opt.step()
                opt.zero_grad()
            if w.done:
                break
    assert not w.check_errors
    return [f for f in w.findings if f.check == "accumulation_not_scaled"]


def test_undivided_accumulation_of_sliced_micro_batches_is_found_at_the_backward():
    from source_lines import line_of

    (f,) = _sliced("undivided")
    assert f.evidence["micro_batches"] == 4 and f.line == line_of("# each micro-batch's mean, undivided", _sliced)


@pytest.mark.parametrize("how", ["divided", "same_slice_twice"])
def test_divided_slices_and_two_passes_on_one_slice_are_clean(how):
    assert _sliced(how) == []


def test_a_gan_on_sliced_real_data_is_not_accumulation():
    # the discriminator's real term on a slice of the data, its fake term on the generator's output
    torch.manual_seed(0)
    data = torch.randn(64, 2)
    G, D = nn.Linear(4, 2), nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.SGD(D.parameters(), lr=0.1)
    bce = nn.BCEWithLogitsLoss()
    with watch(D, opt, steps=2) as w:
        for i in range(0, 64, 16):
            opt.zero_grad()
            bce(D(data[i : i + 16]), torch.ones(16, 1)).backward()
            bce(D(G(torch.randn(16, 4)).detach()), torch.zeros(16, 1)).backward()
            opt.step()
    assert [f.check for f in w.findings] == []

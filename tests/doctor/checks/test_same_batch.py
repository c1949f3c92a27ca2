"""same_batch (checks/batches.py): one batch reused at every step, against two correct loops that an earlier
fingerprint (shape and sums) read as one: rows that are cyclic shifts of one pattern (equal sums in every batch,
the development program batch14/clean/accelerate_accumulate_context_with_clipping.py) and two optimizers stepping
on one batch (batch14/clean/lightning_manual_optimization_two_optimizers.py, a GAN)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _lm(reuse: bool) -> list:
    torch.manual_seed(0)
    rows = torch.stack([(torch.arange(16) + int(torch.randint(0, 8, (1,)))) % 8 + 2 for _ in range(64)])
    model = nn.Sequential(nn.Embedding(12, 16), nn.Linear(16, 12))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:  # the probe counts the batches of the loaders built while it watches
        loader = DataLoader(TensorDataset(rows), batch_size=8, shuffle=True)
        first = next(iter(loader))
        for batch in loader:
            (x,) = first if reuse else batch
            loss = F.cross_entropy(model(x).flatten(0, 1), x.roll(-1, 1).flatten())
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "same_batch"]


def test_one_batch_reused_at_every_step_is_found():
    assert len(_lm(reuse=True)) == 1


def test_batches_of_equal_sums_are_different_batches():
    assert _lm(reuse=False) == []


def test_two_optimizers_stepping_on_one_batch_are_not_a_reused_batch():
    torch.manual_seed(0)
    gen = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    disc = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 1))
    opt_g = torch.optim.Adam(gen.parameters(), lr=1e-3)
    opt_d = torch.optim.Adam(disc.parameters(), lr=1e-3)
    with watch(gen, opt_g, steps=2) as w:
        loader = DataLoader(TensorDataset(torch.randn(256, 2)), batch_size=32, shuffle=True)
        for (real,) in loader:
            z = torch.randn(real.size(0), 4)
            fake = gen(z).detach()  # the first forward of the discriminator's step: z
            d_loss = F.softplus(-disc(real)).mean() + F.softplus(disc(fake)).mean()
            opt_d.zero_grad()
            d_loss.backward()
            opt_d.step()
            g_loss = F.softplus(-disc(gen(z))).mean()  # the generator's step starts on the same z
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
    assert not w.check_errors, w.check_errors
    assert not [f for f in w.findings if f.check == "same_batch"]

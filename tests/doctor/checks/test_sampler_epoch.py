"""sampler_without_set_epoch: a shuffling DistributedSampler entering its second epoch with the same epoch.
num_replicas/rank are given, so no process group is needed."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _epochs(*, set_epoch: bool, shuffle: bool = True):
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))
    sampler = DistributedSampler(data, num_replicas=2, rank=0, shuffle=shuffle)
    loader = DataLoader(data, batch_size=8, sampler=sampler)  # 8 samples on this rank: one step per epoch
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        for epoch in range(2):
            if set_epoch:
                sampler.set_epoch(epoch)
            for xb, yb in loader:
                opt.zero_grad()
                nn.functional.cross_entropy(model(xb), yb).backward()
                opt.step()
    assert not w.check_errors
    return [f for f in w.findings if f.check == "sampler_without_set_epoch"]


def test_second_epoch_without_set_epoch_is_found_with_the_sampler_state():
    (f,) = _epochs(set_epoch=False)
    assert f.evidence == {"sampler_epoch": 0, "epochs_started": 2, "num_replicas": 2, "samples_per_rank": 8}
    assert f.step == 2  # seen before the second watched step


def test_set_epoch_or_no_shuffle_is_clean():
    assert _epochs(set_epoch=True) == []
    assert _epochs(set_epoch=False, shuffle=False) == []  # without shuffling the epoch changes nothing

"""Training one data-parallel shard with DistributedSampler, reshuffled every epoch.

Unusual but correct: the script plays rank 0 of a 2-replica job without
starting a process group, by passing num_replicas and rank to
DistributedSampler explicitly (the sampler only needs these numbers). The
DataLoader uses the sampler with shuffle left off, and sampler.set_epoch(epoch)
is called at the start of every epoch before iterating, so each epoch sees a
different permutation of this rank's shard, as the sampler documentation
requires. The first indices of each epoch are printed to show the reshuffle.

Source: https://github.com/yangkky/distributed_tutorial/issues/5
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

torch.manual_seed(0)
torch.set_num_threads(2)


class Indexed(Dataset):
    def __init__(self, n):
        self.x = torch.randn(n, 10)
        self.y = (self.x[:, :3].sum(1) > 0).long() + (self.x[:, 3] > 0.5).long()

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return i, self.x[i], self.y[i]


ds = Indexed(2000)
sampler = DistributedSampler(ds, num_replicas=2, rank=0, shuffle=True, seed=0)
loader = DataLoader(ds, batch_size=50, sampler=sampler)

model = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

for epoch in range(5):
    sampler.set_epoch(epoch)
    first = None
    total, n = 0.0, 0
    for idx, xb, yb in loader:
        if first is None:
            first = idx[:5].tolist()
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
        n += 1
    print(f"epoch {epoch} loss {total / n:.4f} first indices {first}")

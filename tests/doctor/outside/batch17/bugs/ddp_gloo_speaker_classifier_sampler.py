"""Speaker classifier on synthetic utterance features, trained with DDP on the gloo backend (2 ranks).

Bug: the DataLoader uses a DistributedSampler(shuffle=True) but sampler.set_epoch(epoch) is never
called at the start of each epoch. DistributedSampler seeds its permutation with seed + epoch, so
without set_epoch every epoch replays exactly the same order and the same batch composition on
every rank. Training runs and the loss falls, but the data is effectively not reshuffled between
epochs. The referenced pull request adds the missing set_epoch call, explaining that
DistributedSampler sets its shuffling seed from the current epoch, so set_epoch must be called at
every training epoch for batches to be shuffled correctly.

Source: https://github.com/BatsResearch/taglets/pull/28
"""

import os
import random

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

N_SPK, FEAT, FRAMES, PER_SPK = 8, 24, 30, 40
EPOCHS = 4


def make_dataset():
    g = torch.Generator().manual_seed(0)
    centroids = torch.randn(N_SPK, FEAT, generator=g)
    xs, ys = [], []
    for s in range(N_SPK):
        x = centroids[s] + 1.2 * torch.randn(PER_SPK, FRAMES, FEAT, generator=g)
        xs.append(x)
        ys.append(torch.full((PER_SPK,), s))
    return TensorDataset(torch.cat(xs), torch.cat(ys))


class XVectorLite(nn.Module):
    def __init__(self):
        super().__init__()
        self.frame = nn.Sequential(
            nn.Conv1d(FEAT, 64, 3, padding=1), nn.ReLU(), nn.Conv1d(64, 64, 3, padding=1), nn.ReLU()
        )
        self.seg = nn.Linear(128, 64)
        self.out = nn.Linear(64, N_SPK)

    def forward(self, x):
        h = self.frame(x.transpose(1, 2))
        stats = torch.cat([h.mean(-1), h.std(-1)], dim=1)
        return self.out(torch.relu(self.seg(stats)))


def worker(rank, world, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    ds = make_dataset()
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(ds, batch_size=16, sampler=sampler)
    model = DDP(XVectorLite())
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(EPOCHS):  # BUG-LINE
        total, n = 0.0, 0
        for x, y in loader:
            loss = loss_fn(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            n += 1
        if rank == 0:
            print(f"epoch {epoch} mean_loss {total / n:.4f}")
    dist.destroy_process_group()


def main():
    port = 29500 + random.randint(0, 2000)
    mp.spawn(worker, args=(2, port), nprocs=2, join=True)


if __name__ == "__main__":
    main()

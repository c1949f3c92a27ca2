"""DDP (gloo, 2 processes) with a shuffling DistributedSampler whose epoch is never advanced.

DistributedSampler(shuffle=True) seeds its permutation with seed + epoch. The training loop
iterates several epochs but never calls sampler.set_epoch(epoch), so every epoch replays exactly
the same permutation on every rank: the same examples land in the same mini-batches in the
same order each epoch, removing the epoch-to-epoch reshuffling that SGD relies on. Training
runs normally; the only visible trace is that the batch composition repeats.

Source: https://github.com/pytorch/pytorch/issues/31771
"""

import os
import random

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

WORLD = 2


def worker(rank, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    n = 512
    x = torch.randn(n, 10)
    y = (x[:, :2].sum(1) > 0).long()
    idx = torch.arange(n)
    ds = TensorDataset(x, y, idx)
    sampler = DistributedSampler(ds, num_replicas=WORLD, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(ds, batch_size=32, sampler=sampler)
    model = DDP(nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(6):  # BUG-LINE
        first = None
        total = 0.0
        for xb, yb, ib in loader:
            if first is None:
                first = ib[:6].tolist()
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        if rank == 0:
            print(f"epoch {epoch} mean loss {total / len(loader):.4f} first batch idx {first}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    torch.manual_seed(0)
    torch.set_num_threads(2)
    port = 29500 + random.Random().randint(0, 2000)
    mp.spawn(worker, args=(port,), nprocs=WORLD, join=True)

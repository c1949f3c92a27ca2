"""Two-process DDP (gloo) training of a small classifier with a DistributedSampler.

The sampler is built with shuffle=True, but set_epoch(epoch) is never called
before iterating the loader. DistributedSampler seeds its permutation with
seed + epoch, and epoch stays 0, so every epoch each rank sees exactly the
same order and the same shard split of the data. Shuffling is silently
turned into a fixed ordering repeated every epoch; training still runs and
the loss goes down.

Source: https://discuss.pytorch.org/t/how-dose-distributed-sampler-passes-the-value-epoch-to-data-loader/110929
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
EPOCHS = 4


def run(rank, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.manual_seed(0)

    x = torch.randn(512, 16)
    y = (x[:, 0] * x[:, 1] + x[:, 2] > 0).long()
    ds = TensorDataset(x, y)
    sampler = DistributedSampler(ds, num_replicas=WORLD, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(ds, batch_size=32, sampler=sampler)

    model = DDP(nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    for epoch in range(EPOCHS):
        total, n = 0.0, 0
        for xb, yb in loader:  # BUG-LINE
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            n += 1
        if rank == 0:
            print(f"epoch {epoch} mean loss {total / n:.4f}")
    dist.destroy_process_group()


def main():
    port = 29500 + random.randint(0, 2000)
    mp.spawn(run, args=(port,), nprocs=WORLD, join=True)


if __name__ == "__main__":
    torch.manual_seed(0)
    torch.set_num_threads(2)
    main()

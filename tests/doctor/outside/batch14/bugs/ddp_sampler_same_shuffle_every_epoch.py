"""DDP training (gloo, 2 processes) with a shuffling DistributedSampler but no set_epoch call.

DistributedSampler seeds its permutation with `seed + epoch`, and `epoch` only changes through
`sampler.set_epoch(epoch)`. The loop never calls it before iterating the loader, so every epoch
each rank sees exactly the same shard in exactly the same order: shuffling is silently disabled
across epochs. The issue asks why the sampler does not reshuffle by itself; the order is
identical in every epoch unless set_epoch is called.

Source: https://github.com/pytorch/pytorch/issues/11324
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

EPOCHS = 4


def run(rank, world_size, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(0)
    torch.set_num_threads(1)

    X = torch.randn(256, 10)
    Y = (X[:, 0] * X[:, 1] > 0).long()
    idx = torch.arange(256)
    ds = TensorDataset(X, Y, idx)
    sampler = DistributedSampler(ds, num_replicas=world_size, rank=rank, shuffle=True)
    loader = DataLoader(ds, batch_size=16, sampler=sampler)

    model = DDP(nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(EPOCHS):
        first = None
        total = 0.0
        for x, y, i in loader:  # BUG-LINE
            if first is None:
                first = i[:6].tolist()
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        if rank == 0:
            print(f"epoch {epoch} mean loss {total / len(loader):.4f} first indices {first}")
    dist.destroy_process_group()


if __name__ == "__main__":
    port = 29500 + random.randint(0, 2000)
    mp.spawn(run, args=(2, port), nprocs=2, join=True)

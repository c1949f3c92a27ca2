"""DDP (gloo, 2 processes) with gradient accumulation via no_sync() done right.

Unusual but correct: each optimizer step accumulates ACC = 4 micro-batches. The first ACC-1
backward passes run inside ddp_model.no_sync(), so gradients accumulate locally without
communication; the last micro-batch runs outside the context, and its backward all-reduces the
full accumulated gradient. Each micro-batch loss is divided by ACC so the step equals the mean
over the large batch. The DistributedSampler is re-seeded with set_epoch every epoch, and at
the end the replicas are checked to be bit-identical.

Source: https://github.com/lucidrains/DALLE-pytorch/pull/230
"""

import contextlib
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

WORLD, ACC = 2, 4


def worker(rank, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    x = torch.randn(1024, 12)
    y = (x[:, :3] ** 2).sum(1, keepdim=True) / 3.0
    ds = TensorDataset(x, y)
    sampler = DistributedSampler(ds, num_replicas=WORLD, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(ds, batch_size=8, sampler=sampler, drop_last=True)
    ddp_model = DDP(nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.Adam(ddp_model.parameters(), lr=1e-2)
    for epoch in range(6):
        sampler.set_epoch(epoch)
        running = 0.0
        opt.zero_grad()
        for i, (xb, yb) in enumerate(loader):
            last = (i + 1) % ACC == 0
            ctx = contextlib.nullcontext() if last else ddp_model.no_sync()
            with ctx:
                loss = F.mse_loss(ddp_model(xb), yb) / ACC
                loss.backward()
            running += loss.item()
            if last:
                opt.step()
                opt.zero_grad()
        if rank == 0:
            print(f"epoch {epoch} mean micro-batch loss {running * ACC / len(loader):.4f}", flush=True)
    flat = torch.cat([p.detach().flatten() for p in ddp_model.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(WORLD)]
    dist.all_gather(gathered, flat)
    if rank == 0:
        print(f"replica max abs diff {(gathered[0] - gathered[1]).abs().max().item():.2e}")
    dist.destroy_process_group()


if __name__ == "__main__":
    torch.manual_seed(0)
    torch.set_num_threads(2)
    port = 29500 + random.Random().randint(0, 2000)
    mp.spawn(worker, args=(port,), nprocs=WORLD, join=True)

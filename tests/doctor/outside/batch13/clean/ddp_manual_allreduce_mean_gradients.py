"""Data parallel training on gloo without the DDP wrapper: explicit broadcast + gradient mean.

Unusual but correct: instead of DistributedDataParallel, each of the 2 processes builds the
model with a different seed, then rank 0's parameters are broadcast so all replicas start
identical. After every backward the gradients are summed with dist.all_reduce and divided by
the world size (the averaging DDP would do), so every rank applies the same update and the
replicas stay identical, which is verified at the end.

Source: https://github.com/facebookresearch/fairseq/issues/494
"""

import os
import random

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

WORLD = 2


def worker(rank, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.set_num_threads(1)
    torch.manual_seed(rank)
    model = nn.Sequential(nn.Linear(10, 48), nn.Tanh(), nn.Linear(48, 4))
    with torch.no_grad():
        for p in model.parameters():
            dist.broadcast(p, src=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    g = torch.Generator().manual_seed(1000 + rank)
    proj = torch.randn(10, 4, generator=torch.Generator().manual_seed(7))
    for step in range(150):
        x = torch.randn(32, 10, generator=g)
        y = (x @ proj).argmax(1)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
            p.grad.div_(WORLD)
        opt.step()
        if rank == 0 and step % 30 == 0:
            print(f"step {step:3d} local loss {loss.item():.4f}", flush=True)
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
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

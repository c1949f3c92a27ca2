"""DDP training (gloo, 2 processes) that computes gradients with torch.autograd.grad.

The step computes `torch.autograd.grad(loss, params)` and writes the results into `p.grad`
before `optimizer.step()`. DDP only averages gradients that are accumulated into `.grad` by
`loss.backward()` (its reducer hooks fire on AccumulateGrad); autograd.grad returns the local
gradients without touching the reducer, so nothing is all-reduced. Every rank updates with its
own gradient and the replicas diverge silently, as in the report where the gradients were
correct per worker but never averaged across devices.

Source: https://github.com/pytorch/pytorch/issues/47562
"""

import os
import random

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def run(rank, world_size, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = DDP(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3)))
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=1e-2)

    gen = torch.Generator().manual_seed(7 + rank)
    proj = torch.randn(8, 3, generator=torch.Generator().manual_seed(3))
    for step in range(60):
        x = torch.randn(32, 8, generator=gen)
        y = (x @ proj).argmax(1)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        grads = torch.autograd.grad(loss, params)  # BUG-LINE
        for p, g in zip(params, grads):
            p.grad = g
        opt.step()
        if step % 15 == 0 and rank == 0:
            print(f"step {step:2d} loss {loss.item():.4f}")

    w = model.module[0].weight.detach().clone()
    gathered = [torch.zeros_like(w) for _ in range(world_size)]
    dist.all_gather(gathered, w)
    if rank == 0:
        print(f"max weight difference between replicas: {(gathered[0] - gathered[1]).abs().max().item():.3e}")
    dist.destroy_process_group()


if __name__ == "__main__":
    port = 29500 + random.randint(0, 2000)
    mp.spawn(run, args=(2, port), nprocs=2, join=True)

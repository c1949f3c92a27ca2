"""DDP training (gloo, 2 processes) whose forward pass calls `ddp_model.module` directly.

The model is wrapped in DistributedDataParallel, but the training step calls
`ddp_model.module(x)`, i.e. the raw local module. DDP's forward is what prepares the reducer for
the backward pass; gradients produced by a forward that bypassed the wrapper are not all-reduced
(PyTorch explicitly disables the reducer hooks for backward passes that did not go through DDP's
forward). Each rank therefore steps on its own local gradient and the replicas silently drift
apart while the loss still goes down on every rank.

Source: https://github.com/pytorch/pytorch/pull/60921
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
    model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
    ddp_model = DDP(model)
    opt = torch.optim.SGD(ddp_model.parameters(), lr=0.05)

    gen = torch.Generator().manual_seed(100 + rank)
    w_true = torch.linspace(-1, 1, 8).unsqueeze(1)
    for step in range(60):
        x = torch.randn(32, 8, generator=gen)
        y = x @ w_true
        out = ddp_model.module(x)  # BUG-LINE
        loss = F.mse_loss(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 15 == 0 and rank == 0:
            print(f"step {step:2d} loss {loss.item():.4f}")

    w = model[0].weight.detach().clone()
    gathered = [torch.zeros_like(w) for _ in range(world_size)]
    dist.all_gather(gathered, w)
    if rank == 0:
        print(f"max weight difference between replicas: {(gathered[0] - gathered[1]).abs().max().item():.3e}")
    dist.destroy_process_group()


if __name__ == "__main__":
    port = 29500 + random.randint(0, 2000)
    mp.spawn(run, args=(2, port), nprocs=2, join=True)

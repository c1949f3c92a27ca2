"""DDP training (gloo, 2 processes) with gradient accumulation that skips all-reduce on all but the
last micro-batch via `no_sync`.

Unusual but correct: each optimizer step accumulates 4 micro-batches. The first 3 forward AND
backward passes run inside `ddp_model.no_sync()` so their gradients only accumulate locally; the
last micro-batch runs outside it, and its backward all-reduces the accumulated sum once. Each
micro-batch loss is divided by the accumulation count, each rank reads a different shard, and the
script checks that the replicas stay bit-identical.

Source: https://github.com/karpathy/nanochat/pull/33
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

ACCUM = 4


def run(rank, world_size, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    ddp_model = DDP(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)))
    opt = torch.optim.AdamW(ddp_model.parameters(), lr=5e-3)
    gen = torch.Generator().manual_seed(1000 + rank)
    w_true = torch.linspace(-1, 1, 8).unsqueeze(1)

    for step in range(30):
        opt.zero_grad()
        total = 0.0
        for micro in range(ACCUM):
            x = torch.randn(16, 8, generator=gen)
            y = torch.relu(x @ w_true)
            last = micro == ACCUM - 1
            ctx = contextlib.nullcontext() if last else ddp_model.no_sync()
            with ctx:
                loss = F.mse_loss(ddp_model(x), y) / ACCUM
                loss.backward()
            total += loss.item()
        opt.step()
        if step % 10 == 0 and rank == 0:
            print(f"step {step:2d} loss {total:.4f}")

    w = ddp_model.module[0].weight.detach().clone()
    gathered = [torch.zeros_like(w) for _ in range(world_size)]
    dist.all_gather(gathered, w)
    if rank == 0:
        print(f"max weight difference between replicas: {(gathered[0] - gathered[1]).abs().max().item():.3e}")
    dist.destroy_process_group()


if __name__ == "__main__":
    port = 29500 + random.randint(0, 2000)
    mp.spawn(run, args=(2, port), nprocs=2, join=True)

"""DDP (gloo, 2 processes) training loop that calls the wrapped model's .module directly.

The model is wrapped in DistributedDataParallel, but the training step computes the output
with ddp_model.module(x) (written that way so the same helper works with and without DDP).
DDP only registers its gradient all-reduce hooks when its own forward() runs, so calling the
inner module skips prepare_for_backward entirely: each rank back-propagates and steps on its
own shard only. The replicas, identical at start (DDP broadcast the initial weights), silently
drift apart; each rank's loss still goes down, so the run looks healthy.

Source: https://github.com/pytorch/pytorch/pull/20282
"""

import os
import random

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD = 2


def worker(rank, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.set_num_threads(1)
    torch.manual_seed(rank)  # DDP broadcasts rank 0's weights at construction
    ddp_model = DDP(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3)))
    opt = torch.optim.Adam(ddp_model.parameters(), lr=5e-3)
    g = torch.Generator().manual_seed(10 + rank)
    centers = torch.randn(3, 8, generator=torch.Generator().manual_seed(0)) * 2
    for step in range(120):
        y = torch.randint(0, 3, (32,), generator=g)
        x = centers[y] + torch.randn(32, 8, generator=g) * (1.0 + rank)  # ranks hold different shards
        logits = ddp_model.module(x)  # BUG-LINE
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 30 == 0:
            print(f"rank {rank} step {step:3d} loss {loss.item():.4f}", flush=True)
    flat = torch.cat([p.detach().flatten() for p in ddp_model.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(WORLD)]
    dist.all_gather(gathered, flat)
    if rank == 0:
        print(f"max |param_rank0 - param_rank1| = {(gathered[0] - gathered[1]).abs().max().item():.5f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    torch.manual_seed(0)
    torch.set_num_threads(2)
    port = 29500 + random.Random().randint(0, 2000)
    mp.spawn(worker, args=(port,), nprocs=WORLD, join=True)

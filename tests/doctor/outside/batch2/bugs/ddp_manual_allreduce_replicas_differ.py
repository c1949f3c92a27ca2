"""Data parallel by hand on gloo (mp.spawn): gradients are averaged with all_reduce after backward, but each
process seeds itself with its rank and builds its own model, and the initial weights are never broadcast, so
the replicas start different and stay different while they believe they train one model.

Source: https://discuss.pytorch.org/t/model-and-optimizer-parameters-synchronization-at-start/214872
"""

import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn

WORLD = 2


def run(rank: int) -> None:
    os.environ["RANK"] = str(rank)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.manual_seed(rank)  # a different data stream per rank
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))  # BUG-LINE
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _step in range(4):
        x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
            p.grad /= WORLD
        opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    with socket.socket() as s:  # a free port: two such programs may run at once
        s.bind(("127.0.0.1", 0))
        os.environ["MASTER_PORT"] = str(s.getsockname()[1])
    mp.spawn(run, nprocs=WORLD)

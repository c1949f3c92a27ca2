"""DDP (gloo, 2 processes) where the loss is all-reduced and averaged *before* backward.

To make the loss "global", each rank runs dist.all_reduce(loss) followed by
loss.div_(world_size) and then calls loss.backward(). dist.all_reduce is not tracked by
autograd, so it only changes the value of the loss; the in-place division, however, is
recorded and scales the local gradient by 1/world_size. DDP then averages those already-shrunk
gradients across ranks, so every update is world_size times smaller than intended (an
effective learning rate of lr / world_size with SGD). The logged loss looks perfectly
reasonable (it is the true global mean), so nothing looks off except slow training.

Source: https://github.com/NVIDIA/apex/issues/664
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
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(100 + rank)
    w = torch.linspace(-1, 1, 16).unsqueeze(1)
    for step in range(150):
        x = torch.randn(32, 16, generator=g)
        y = x @ w
        loss = F.mse_loss(model(x), y)
        dist.all_reduce(loss)
        loss.div_(WORLD)  # BUG-LINE
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 30 == 0:
            print(f"step {step:3d} global loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    torch.manual_seed(0)
    torch.set_num_threads(2)
    port = 29500 + random.Random().randint(0, 2000)
    mp.spawn(worker, args=(port,), nprocs=WORLD, join=True)

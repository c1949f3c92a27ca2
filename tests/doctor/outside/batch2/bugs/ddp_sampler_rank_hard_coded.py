"""DDP on gloo (mp.spawn) whose DistributedSampler is given ``rank=0`` on every process (copied from a
single-process debug run): every replica gets the shard of rank 0, the other shard is never seen.

Source: https://github.com/openspeech-team/openspeech/issues/149
"""

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
    data = TensorDataset(torch.randn(256, 6), torch.randn(256, 1))
    sampler = DistributedSampler(data, num_replicas=WORLD, rank=0, shuffle=True)  # BUG-LINE
    loader = DataLoader(data, batch_size=16, sampler=sampler)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            loss = F.mse_loss(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    with socket.socket() as s:  # a free port: two such programs may run at once
        s.bind(("127.0.0.1", 0))
        os.environ["MASTER_PORT"] = str(s.getsockname()[1])
    mp.spawn(run, nprocs=WORLD)

"""DDP on gloo started with mp.spawn: after wrapping the model, the script replaces the output layer's bias with a
fresh ``nn.Parameter`` (re-initialised to the class prior). DDP registered its gradient hooks on the parameters
it saw at construction, so the new bias's gradient is never all-reduced: each rank steps it on its own shard
and the replicas drift apart in that parameter. Without ``find_unused_parameters=True`` DDP stops at the second
step (the old bias never gets a gradient); the error message suggests that flag, and with it the run is silent.

Source: https://github.com/pytorch/pytorch/issues/12603
"""

import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def run(rank, world_size, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(256, 10, generator=g), torch.randint(0, 3, (256,), generator=g))
    sampler = DistributedSampler(data, num_replicas=world_size, rank=rank, shuffle=True)
    loader = DataLoader(data, batch_size=16, sampler=sampler)
    net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
    model = nn.parallel.DistributedDataParallel(net, find_unused_parameters=True)  # as the reducer's error advised
    prior = torch.bincount(data.tensors[1], minlength=3).float() / len(data)
    net[2].bias = nn.Parameter(prior.log())  # BUG-LINE
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(2, 29517), nprocs=2)

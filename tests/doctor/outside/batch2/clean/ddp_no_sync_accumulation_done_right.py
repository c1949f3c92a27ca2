"""DDP on gloo with gradient accumulation: every micro-batch but the last of each group runs under
``no_sync()``, the last one syncs, and the loss is divided by the group size.

Source: https://runebook.dev/en/docs/pytorch/generated/torch.nn.parallel.distributeddataparallel/torch.nn.parallel.DistributedDataParallel.no_sync
doctor-command: torchrun --standalone --nproc-per-node 2 {program}
"""

import contextlib

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

ACCUM = 2
dist.init_process_group("gloo")
torch.manual_seed(0)
data = TensorDataset(torch.randn(256, 10), torch.randn(256, 1))
sampler = DistributedSampler(data, shuffle=True)
loader = DataLoader(data, batch_size=8, sampler=sampler)
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 1)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for i, (xb, yb) in enumerate(loader):
    last_of_group = (i + 1) % ACCUM == 0
    with contextlib.nullcontext() if last_of_group else model.no_sync():
        loss = F.mse_loss(model(xb), yb) / ACCUM
        loss.backward()
    if last_of_group:
        opt.step()
        opt.zero_grad()
dist.destroy_process_group()

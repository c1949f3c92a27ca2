"""DDP on gloo with gradient accumulation: the condition meant to sync only on the last micro-batch is always
true (``(i + 1) % k`` is never ``k``), so every backward runs under ``no_sync()`` and no gradient is ever
all-reduced; each rank steps on its local sum.

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
    skip_sync = (i + 1) % ACCUM != ACCUM  # BUG-LINE
    with model.no_sync() if skip_sync else contextlib.nullcontext():
        loss = F.mse_loss(model(xb), yb) / ACCUM
        loss.backward()
    if (i + 1) % ACCUM == 0:
        opt.step()
        opt.zero_grad()
dist.destroy_process_group()

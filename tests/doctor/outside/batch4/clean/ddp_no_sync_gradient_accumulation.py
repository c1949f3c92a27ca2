"""Gradient accumulation under DDP: the first micro-batches of each cycle run inside model.no_sync() so no
all-reduce happens, and the last micro-batch runs outside it so the accumulated gradients are averaged once
before the step. Skipping communication on those backward passes is intended.

Source: https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html
doctor-command: torchrun --standalone --nproc-per-node 2 {program}
"""

import contextlib

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
ACCUM = 2
model = DDP(nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 3)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
g = torch.Generator().manual_seed(3 + rank)
X, y = torch.randn(128, 12, generator=g), torch.randint(0, 3, (128,), generator=g)
opt.zero_grad()
for n, i in enumerate(range(0, 128, 16), start=1):
    ctx = model.no_sync() if n % ACCUM != 0 else contextlib.nullcontext()
    with ctx:
        loss = F.cross_entropy(model(X[i : i + 16]), y[i : i + 16]) / ACCUM
        loss.backward()
    if n % ACCUM == 0:
        opt.step()
        opt.zero_grad()
del model
dist.destroy_process_group()

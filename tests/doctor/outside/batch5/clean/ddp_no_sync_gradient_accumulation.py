"""Gradient accumulation under DDP: the first micro-batches of each accumulation window run inside
``model.no_sync()`` so gradients accumulate locally without all-reduce, and only the last micro-batch
synchronises before the optimizer step. Losses are divided by the number of micro-batches.

Source: https://pytorch.org/docs/stable/notes/ddp.html
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
model = DDP(nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
accum = 2
torch.manual_seed(rank + 1)
for _step in range(4):
    opt.zero_grad()
    for micro in range(accum):
        x, y = torch.randn(8, 10), torch.randint(0, 3, (8,))
        ctx = model.no_sync() if micro < accum - 1 else contextlib.nullcontext()
        with ctx:
            loss = F.cross_entropy(model(x), y) / accum
            loss.backward()
    opt.step()
del model
dist.barrier()
dist.destroy_process_group()

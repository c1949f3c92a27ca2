"""Gradient accumulation under DDP: the first micro-batches run inside ``model.no_sync()`` so their gradients
accumulate locally without all-reduce, and only the last micro-batch's backward (outside the context)
triggers the synchronisation of the accumulated gradients before the single optimizer step.

Source: https://huggingface.co/docs/accelerate/concept_guides/gradient_synchronization
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
model = DDP(nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
accum = 4
g = torch.Generator().manual_seed(rank)
for _step in range(4):
    opt.zero_grad()
    for micro in range(accum):
        x = torch.randn(8, 10, generator=g)
        ctx = model.no_sync() if micro < accum - 1 else contextlib.nullcontext()
        with ctx:
            loss = F.mse_loss(model(x), x[:, :2].sum(1, keepdim=True)) / accum
            loss.backward()
    opt.step()
del model
dist.barrier()
dist.destroy_process_group()

"""DDP gradient accumulation that skips the all-reduce on non-final micro-batches.

Forward and backward of the first ACCUM-1 micro-batches run inside
ddp_model.no_sync(), so gradients accumulate locally; the last micro-batch runs
outside the context and triggers one all-reduce of the accumulated gradients
before optimizer.step().  Losses are scaled by 1/ACCUM.
doctor-command: python -m torch.distributed.run --standalone --nproc-per-node 2 ddp_no_sync_gradient_accumulation.py
Source: https://github.com/pytorch/pytorch/pull/21736
"""

import gc

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
ACCUM = 3
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
ddp_model = DDP(model)
opt = torch.optim.SGD(ddp_model.parameters(), lr=0.05)
g = torch.Generator().manual_seed(rank)
x, y = torch.randn(6 * ACCUM * 4, 8, generator=g), torch.randn(6 * ACCUM * 4, 1, generator=g)

for step in range(6):
    opt.zero_grad()
    for micro in range(ACCUM):
        i = (step * ACCUM + micro) * 4
        xb, yb = x[i : i + 4], y[i : i + 4]
        if micro < ACCUM - 1:
            with ddp_model.no_sync():
                (nn.functional.mse_loss(ddp_model(xb), yb) / ACCUM).backward()
        else:
            loss = nn.functional.mse_loss(ddp_model(xb), yb) / ACCUM
            loss.backward()
    opt.step()

w = model[0].weight.detach().clone()
ref = w.clone()
dist.broadcast(ref, src=0)
if rank == 1:
    print(f"replicas in sync: {torch.allclose(w, ref)} loss {loss.item() * ACCUM:.4f}")
del ddp_model, opt, model
gc.collect()
dist.barrier()
dist.destroy_process_group()

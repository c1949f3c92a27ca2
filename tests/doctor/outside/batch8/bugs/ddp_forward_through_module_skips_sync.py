"""Forward pass called on ddp_model.module instead of the DDP wrapper.

DistributedDataParallel only prepares gradient all-reduce when its own forward
runs.  Calling the wrapped module directly bypasses DDP, so each rank keeps
its local gradients and the replicas silently diverge into independent models.
doctor-command: python -m torch.distributed.run --standalone --nproc-per-node 2 ddp_forward_through_module_skips_sync.py
Source: https://github.com/rosinality/swapping-autoencoder-pytorch/issues/22
"""

import gc

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
ddp_model = DDP(model)
opt = torch.optim.SGD(ddp_model.parameters(), lr=0.1)
torch.manual_seed(100 + rank)
x, y = torch.randn(32, 8), torch.randn(32, 1)

for _step in range(6):
    opt.zero_grad()
    out = ddp_model.module(x)  # BUG-LINE
    loss = nn.functional.mse_loss(out, y)
    loss.backward()
    opt.step()

w = model[0].weight.detach().clone()
other = w.clone()
dist.broadcast(other, src=0)
if rank == 1:
    print(f"replica divergence after training: {(w - other).abs().max().item():.4f}")
del ddp_model, opt, model
gc.collect()
dist.barrier()
dist.destroy_process_group()

"""The model is wrapped in DistributedDataParallel, but the training loop calls the
original, unwrapped module for the forward pass. Backward then never triggers
DDP's gradient all-reduce: each rank steps on its own local gradients from its own
data shard, and the replicas silently drift apart from the first optimizer step.

doctor-command: torchrun --standalone --nproc-per-node 2 ddp_forward_through_unwrapped_model.py

Source: https://github.com/huggingface/blog/pull/2338
"""

import gc

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
ddp_model = DDP(model)
opt = torch.optim.SGD(ddp_model.parameters(), lr=0.05)
g = torch.Generator().manual_seed(100 + rank)
for _step in range(5):
    xb = torch.randn(16, 8, generator=g)
    yb = xb.sum(1, keepdim=True)
    opt.zero_grad()
    out = model(xb)  # BUG-LINE
    loss = nn.functional.mse_loss(out, yb)
    loss.backward()
    opt.step()
if rank == 0:
    print("loss", loss.item())
del ddp_model
del model
gc.collect()
dist.barrier()
dist.destroy_process_group()

"""DDP training with gradient-norm clipping. clip_grad_norm_ is called after
loss.backward() returns, when DDP has already all-reduced the gradients, and
before optimizer.step(). Every rank therefore clips the same averaged gradient
with the same factor and the replicas stay identical, even though each rank saw
a different data shard.

doctor-command: torchrun --standalone --nproc-per-node 2 ddp_grad_clipping_after_allreduce.py

Source: https://arxiv.org/abs/1211.5063
"""

import gc

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
g = torch.Generator().manual_seed(10 + rank)
for _step in range(5):
    x = torch.randn(16, 8, generator=g)
    y = 20.0 * x[:, :1]
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    opt.step()
if rank == 0:
    print("loss", loss.item())
del model
gc.collect()
dist.barrier()
dist.destroy_process_group()

"""DDP training whose DataLoader has no DistributedSampler.

Every rank builds the same DataLoader over the full dataset, so all ranks see
identical batches in the same order.  DDP then averages identical gradients:
the effective batch is that of a single process, each epoch processes every
sample world_size times, and the extra processes add nothing.
doctor-command: python -m torch.distributed.run --standalone --nproc-per-node 2 ddp_without_distributed_sampler.py
Source: https://github.com/PatrickHua/SimSiam/issues/16
"""

import gc

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
x = torch.randn(64, 8)
y = x.sum(1, keepdim=True)
dataset = TensorDataset(torch.arange(64), x, y)
loader = DataLoader(dataset, batch_size=8, shuffle=True)  # BUG-LINE
model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)

first_ids = None
for step, (idx, xb, yb) in enumerate(loader):
    if first_ids is None:
        first_ids = idx.clone()
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(xb), yb)
    loss.backward()
    opt.step()
    if step == 5:
        break

other = first_ids.clone()
dist.broadcast(other, src=0)
if rank == 1:
    print(f"rank0 and rank1 trained on the same first batch: {torch.equal(other, first_ids)}")
del model, opt
gc.collect()
dist.barrier()
dist.destroy_process_group()

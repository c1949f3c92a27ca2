"""Trains a small tabular churn classifier with DDP on gloo (2 processes) for two short epochs. Each rank reads its own
shard through a DistributedSampler (shuffle=True, drop_last=True) and calls sampler.set_epoch(epoch) before every
epoch so that the shuffle changes between epochs while staying consistent across ranks. The loss is all-reduced for
logging only, on a detached copy, so the backward pass and DDP's own gradient averaging are untouched.

doctor-command: python -m torch.distributed.run --standalone --nproc-per-node 2 ddp_gloo_sharded_sampler_set_epoch_loss_logging.py

Source: https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler
"""

import gc

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
X = torch.randn(200, 12)
y = (X[:, 0] + 0.5 * X[:, 3] - X[:, 7] > 0).float()
ds = TensorDataset(X, y)
sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=0, drop_last=True)
loader = DataLoader(ds, batch_size=25, sampler=sampler)
model = DDP(nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 1)))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for xb, yb in loader:
        loss = nn.functional.binary_cross_entropy_with_logits(model(xb).squeeze(-1), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        logged = loss.detach().clone()
        dist.all_reduce(logged, op=dist.ReduceOp.SUM)
        logged /= world
    if rank == 0:
        print("epoch", epoch, "mean loss over ranks:", round(logged.item(), 4))
del model
gc.collect()
dist.barrier()
dist.destroy_process_group()

"""Data-parallel training of a small MLP classifier on a synthetic tabular dataset with
DistributedDataParallel on the gloo backend, two CPU processes. Each rank builds its DistributedSampler
with seed=rank, but the sampler relies on every replica using the same seed so that the shuffled
permutation is shared and each rank takes a disjoint slice of it. With different seeds the ranks shuffle
differently, so within an epoch some samples are seen by both ranks and others by neither, from the
first batch on. No error or warning is raised.

doctor-command: python -m torch.distributed.run --standalone --nproc-per-node 2 ddp_sampler_seed_per_rank.py

Source: https://github.com/mlcommons/training/pull/625
"""

import gc

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
N = 1024
X = torch.randn(N, 12)
y = ((X[:, :3].sum(1) > 0) ^ (X[:, 3] > 0.5)).long()
ds = TensorDataset(torch.arange(N), X, y)
sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=rank)  # BUG-LINE
loader = DataLoader(ds, batch_size=32, sampler=sampler)

model = DDP(nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 2)))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
seen = torch.zeros(N)
sampler.set_epoch(0)
for step, (idx, xb, yb) in enumerate(loader):
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    seen[idx] += 1
dist.all_reduce(seen)
if rank == 0:
    print(f"steps per rank: {step + 1}, last loss {loss.item():.4f}")
    print("samples seen twice:", int((seen > 1).sum()), "never seen:", int((seen == 0).sum()))

del model
gc.collect()
dist.barrier()
dist.destroy_process_group()

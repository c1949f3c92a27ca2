"""Trains a small MLP forecaster (predict the next value of noisy sine-wave series from the last 24
values) with DistributedDataParallel on gloo. The loss is divided by the world size "because the
gradients are summed across ranks" -- but DDP already averages gradients in its all-reduce. The
extra division scales every gradient by 1/world_size, which with SGD is the same as silently
cutting the learning rate in half (and in general makes the effective LR depend on the number of
processes). Training runs and the loss decreases, just more slowly; nothing warns.

doctor-command: python -m torch.distributed.run --standalone --nproc-per-node 2 ddp_forecaster_loss_divided_by_world_size.py

Source: https://github.com/verl-project/verl-SpeCo/pull/29
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
W = 24
t = torch.arange(0, 4000) * 0.07
series = torch.sin(t) + 0.5 * torch.sin(0.31 * t + 1.0) + 0.05 * torch.randn_like(t)
idx = torch.arange(0, len(series) - W - 1)
x = torch.stack([series[i : i + W] for i in idx.tolist()])
y = series[idx + W]
data = TensorDataset(x, y)
loader = DataLoader(data, batch_size=64, sampler=DistributedSampler(data, shuffle=True, seed=0))

model = DDP(nn.Sequential(nn.Linear(W, 64), nn.Tanh(), nn.Linear(64, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step, (xb, yb) in enumerate(loader):
    loss = nn.functional.mse_loss(model(xb).squeeze(-1), yb)
    loss = loss / world  # BUG-LINE
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step == 40:
        break
    if rank == 0 and step % 10 == 0:
        print(f"step {step} loss {loss.item() * world:.4f}")
with torch.no_grad():
    full = nn.functional.mse_loss(model(x).squeeze(-1), y).item()
if rank == 0:
    print(f"final full-data mse {full:.4f}")

del model
gc.collect()
dist.barrier()
dist.destroy_process_group()

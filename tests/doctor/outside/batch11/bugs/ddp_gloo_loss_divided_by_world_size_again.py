"""Trains a small 1-D CNN time-series forecaster with DDP on gloo (2 processes), each rank on its own shard via
DistributedSampler and plain SGD. Believing that DDP sums gradients across processes, the training step divides the
loss by the world size before backward. DDP already averages gradients over ranks, so every gradient is world_size
times too small and the effective learning rate is halved from the first step (it would be 8x smaller on 8 GPUs).
No error or warning; the run just learns more slowly.

doctor-command: python -m torch.distributed.run --standalone --nproc-per-node 2 ddp_gloo_loss_divided_by_world_size_again.py

Source: https://github.com/sanderwood/bgpt/issues/5
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
t = torch.arange(600, dtype=torch.float32)
series = torch.sin(t / 7) + 0.5 * torch.sin(t / 17) + 0.05 * torch.randn(600)
win = series.unfold(0, 33, 1)
X, y = win[:, :32].unsqueeze(1), win[:, 32]
ds = TensorDataset(X, y)
sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=0)
loader = DataLoader(ds, batch_size=32, sampler=sampler)
net = nn.Sequential(nn.Conv1d(1, 16, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(4), nn.Flatten(), nn.Linear(64, 1))
model = DDP(net)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
sampler.set_epoch(0)
for step, (xb, yb) in enumerate(loader):
    loss = nn.functional.mse_loss(model(xb).squeeze(-1), yb)
    opt.zero_grad()
    (loss / world).backward()  # BUG-LINE
    opt.step()
    if step == 11:
        break
if rank == 0:
    print("loss after 12 steps:", round(loss.item(), 4))
del model
gc.collect()
dist.barrier()
dist.destroy_process_group()

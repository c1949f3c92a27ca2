"""DDP training following the torchrun multi-GPU pattern: the DataLoader uses a
DistributedSampler so each rank gets a disjoint shard, sampler.set_epoch(epoch) is
called at the start of every epoch so the shuffle changes, and the loss is
all-reduced only for logging (under no_grad). All ranks step the same DDP model.

doctor-command: torchrun --standalone --nproc-per-node 2 ddp_distributed_sampler_with_set_epoch.py

Source: https://github.com/pytorch/examples/blob/main/distributed/ddp-tutorial-series/multigpu_torchrun.py
"""

import gc

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
torch.manual_seed(0)
x = torch.randn(64, 8)
y = (x[:, 0] + x[:, 1] > 0).long()
ds = torch.utils.data.TensorDataset(x, y)
sampler = DistributedSampler(ds, shuffle=True, seed=0)
loader = torch.utils.data.DataLoader(ds, batch_size=8, sampler=sampler)
model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for xb, yb in loader:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
with torch.no_grad():
    avg = loss.detach().clone()
    dist.all_reduce(avg)
    avg /= dist.get_world_size()
if dist.get_rank() == 0:
    print("loss", avg.item())
del model
gc.collect()
dist.barrier()
dist.destroy_process_group()

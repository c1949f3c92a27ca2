"""Standard DDP data sharding: a DistributedSampler gives each rank a disjoint shard, set_epoch is called every
epoch so the shuffle changes, and DDP averages gradients. Different ranks seeing different data and different
local losses is intended.

Source: https://pytorch.org/tutorials/intermediate/ddp_tutorial.html
doctor-command: torchrun --standalone --nproc-per-node 2 {program}
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
torch.manual_seed(0)
X, y = torch.randn(128, 10), torch.randint(0, 2, (128,))
dataset = TensorDataset(X, y)
sampler = DistributedSampler(dataset, shuffle=True, seed=0)
loader = DataLoader(dataset, batch_size=16, sampler=sampler)
model = DDP(nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for xb, yb in loader:
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
del model
dist.destroy_process_group()

"""DDP on gloo where each rank seeds itself differently (for its dropout and augmentation): the replicas are
built with different weights, which is fine because DistributedDataParallel broadcasts rank 0's state at
construction; a DistributedSampler with set_epoch gives each rank its own shard.

Source: https://github.com/pytorch/tutorials/pull/973
doctor-command: torchrun --standalone --nproc-per-node 2 {program}
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
g = torch.Generator().manual_seed(0)
data = TensorDataset(torch.randn(256, 12, generator=g), torch.randint(0, 3, (256,), generator=g))
torch.manual_seed(100 + dist.get_rank())
model = nn.parallel.DistributedDataParallel(
    nn.Sequential(nn.Linear(12, 48), nn.ReLU(), nn.Dropout(0.1), nn.Linear(48, 3))
)
sampler = DistributedSampler(data, shuffle=True, seed=0)
loader = DataLoader(data, batch_size=16, sampler=sampler)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for xb, yb in loader:
        loss = F.cross_entropy(model(xb + 0.01 * torch.randn_like(xb)), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
dist.destroy_process_group()

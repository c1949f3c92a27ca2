"""DDP (gloo, 2 processes under torchrun) fine-tuning on a small data set for many epochs: the
DistributedSampler shuffles, but set_epoch is never called, so every epoch repeats the same order.

doctor-command: torchrun --standalone --nproc-per-node 2 {program}
doctor-expect: sampler_without_set_epoch
"""

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
torch.manual_seed(0)
X, y = torch.randn(64, 8), torch.randint(0, 3, (64,))
data = TensorDataset(X, y)
sampler = DistributedSampler(data, shuffle=True)
loader = DataLoader(data, batch_size=32, sampler=sampler)  # 32 samples per rank: one step per epoch
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(20):  # noqa: B007 - the unused epoch is the bug
    # bug: sampler.set_epoch(epoch) missing
    for xb, yb in loader:
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
dist.destroy_process_group()

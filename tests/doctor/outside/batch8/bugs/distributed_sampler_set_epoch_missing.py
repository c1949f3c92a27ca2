"""DistributedSampler(shuffle=True) used without calling sampler.set_epoch(epoch).

The sampler seeds its permutation with seed + epoch, and epoch only changes
through set_epoch().  Without it every epoch replays exactly the same
"shuffled" order on every rank, so the data order is fixed for the whole run.
doctor-command: python -m torch.distributed.run --standalone --nproc-per-node 2 distributed_sampler_set_epoch_missing.py
Source: https://github.com/kan-bayashi/ParallelWaveGAN/issues/177
"""

import gc

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
x = torch.randn(16, 8)
y = x.sum(1, keepdim=True)
dataset = TensorDataset(torch.arange(16), x, y)
sampler = DistributedSampler(dataset, shuffle=True)
loader = DataLoader(dataset, batch_size=4, sampler=sampler)
model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)

orders = []
for _epoch in range(3):  # BUG-LINE
    seen = []
    for idx, xb, yb in loader:
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
        seen.extend(idx.tolist())
    orders.append(seen)

if rank == 0:
    print(f"epoch orders identical: {orders[0] == orders[1] == orders[2]}")
del model, opt
gc.collect()
dist.barrier()
dist.destroy_process_group()

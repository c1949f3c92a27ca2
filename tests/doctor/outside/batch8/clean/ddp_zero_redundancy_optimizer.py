"""DDP with ZeroRedundancyOptimizer sharding the Adam state across ranks.

Each rank holds optimizer state only for its shard of the parameters and
updates only that shard; ZeroRedundancyOptimizer then broadcasts the updated
parameters so all replicas stay identical.  Per-rank optimizer state covering
only part of the model is intended.
doctor-command: python -m torch.distributed.run --standalone --nproc-per-node 2 ddp_zero_redundancy_optimizer.py
Source: https://pytorch.org/tutorials/recipes/zero_redundancy_optimizer.html
"""

import gc

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.Sequential(*[nn.Linear(16, 16) for _ in range(4)], nn.Linear(16, 1))
ddp_model = DDP(model)
opt = ZeroRedundancyOptimizer(ddp_model.parameters(), optimizer_class=torch.optim.Adam, lr=1e-3)
x = torch.randn(96, 16)
dataset = TensorDataset(x, x.sum(1, keepdim=True))
sampler = DistributedSampler(dataset, shuffle=True, seed=0)
loader = DataLoader(dataset, batch_size=8, sampler=sampler)

sampler.set_epoch(0)
for step, (xb, yb) in enumerate(loader):
    opt.zero_grad()
    loss = nn.functional.mse_loss(ddp_model(xb), yb)
    loss.backward()
    opt.step()
    if step == 5:
        break

w = model[0].weight.detach().clone()
ref = w.clone()
dist.broadcast(ref, src=0)
if rank == 1:
    print(f"replicas in sync: {torch.allclose(w, ref)} loss {loss.item():.4f}")
del ddp_model, opt, model
gc.collect()
dist.barrier()
dist.destroy_process_group()

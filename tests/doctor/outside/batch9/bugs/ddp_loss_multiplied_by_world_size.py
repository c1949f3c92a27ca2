"""The loss is multiplied by world_size before backward, although DDP already averages gradients.

DDP all-reduces gradients with a mean over ranks, so scaling the loss by world_size makes every
gradient world_size times larger than the single-process equivalent; the first optimizer step
is already too large.
doctor-command: python -m torch.distributed.run --standalone --nproc-per-node 2 ddp_loss_multiplied_by_world_size.py
Source: https://github.com/neuralmagic/sparseml/pull/135
"""

import gc

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
world = dist.get_world_size()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
ddp = DDP(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
gen = torch.Generator().manual_seed(rank)

for _step in range(8):
    x = torch.randn(16, 10, generator=gen)
    y = torch.randint(0, 4, (16,), generator=gen)
    loss = torch.nn.functional.cross_entropy(ddp(x), y)
    loss = loss * world  # BUG-LINE
    opt.zero_grad()
    loss.backward()
    opt.step()
if rank == 0:
    print(f"loss {loss.item():.4f}")
del ddp, opt, model
gc.collect()
dist.barrier()
dist.destroy_process_group()

"""Data-parallel training of a small MLP on a tabular regression task with DDP on the gloo backend (2 processes).
The DataLoader is built with shuffle=True and a fixed generator seed but without a DistributedSampler, so both ranks
draw exactly the same mini-batches in the same order. DDP averages two identical gradients: each step sees only
one per-rank batch of distinct data instead of world_size batches, and each epoch is the whole dataset processed
twice in parallel. Nothing fails or warns; training simply gets half the data throughput it appears to have.

doctor-command: python -m torch.distributed.run --standalone --nproc-per-node 2 ddp_gloo_no_distributed_sampler_duplicate_batches.py

Source: https://github.com/SalesforceAIResearch/DiffusionDPO/issues/15
"""

import gc

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
X = torch.randn(512, 10)
y = X @ torch.linspace(-1, 1, 10) + 0.1 * torch.randn(512)
ds = TensorDataset(X, y)
loader = DataLoader(ds, batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(1))  # BUG-LINE

model = DDP(nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
seen = []
for step, (xb, yb) in enumerate(loader):
    seen.append(xb[0, 0].item())
    loss = nn.functional.mse_loss(model(xb).squeeze(-1), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step == 7:
        break
first = torch.tensor(seen)
other = first.clone()
dist.broadcast(other, src=1)
if rank == 0:
    print("ranks saw identical batches:", bool(torch.equal(first, other)), "last loss:", round(loss.item(), 4))
del model
gc.collect()
dist.barrier()
dist.destroy_process_group()

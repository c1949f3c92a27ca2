"""Data-parallel training of a tabular regression MLP on the gloo backend without the DDP wrapper:
the model is replicated by broadcasting rank 0's parameters once, each rank computes gradients on
its own shard, and the gradients are averaged by hand with dist.all_reduce(SUM) followed by a
division by the world size before optimizer.step(). Also uses a second, rank-local backward-free
metric reduction (all_reduce of detached loss values). Unusual (manual collectives instead of
DistributedDataParallel) but correct: replicas stay bit-identical.

doctor-command: python -m torch.distributed.run --standalone --nproc-per-node 2 ddp_free_manual_gradient_allreduce.py

Source: https://pytorch.org/tutorials/intermediate/dist_tuto.html
"""

import gc

import torch
import torch.distributed as dist
from torch import nn

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(rank)  # different local init on purpose; rank 0's weights are broadcast below
F = 10
g = torch.Generator().manual_seed(0)
x_all = torch.randn(1024, F, generator=g)
w_true = torch.randn(F, generator=g)
y_all = torch.tanh(x_all @ w_true) + 0.1 * torch.randn(1024, generator=g)
x, y = x_all[rank::world], y_all[rank::world]

model = nn.Sequential(nn.Linear(F, 32), nn.ReLU(), nn.Linear(32, 1))
for p in model.parameters():
    dist.broadcast(p.data, src=0)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

for step in range(30):
    idx = torch.randint(0, len(x), (64,), generator=torch.Generator().manual_seed(step * world + rank))
    loss = nn.functional.mse_loss(model(x[idx]).squeeze(-1), y[idx])
    opt.zero_grad()
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
        p.grad /= world
    opt.step()
    metric = loss.detach().clone()
    dist.all_reduce(metric, op=dist.ReduceOp.SUM)
    if rank == 0 and step % 10 == 0:
        print(f"step {step} mean loss {metric.item() / world:.4f}")

w = model[0].weight.detach().clone()
both = [torch.zeros_like(w) for _ in range(world)]
dist.all_gather(both, w)
if rank == 0:
    print(f"max weight difference between ranks {(both[0] - both[1]).abs().max().item():.2e}")

del model
gc.collect()
dist.barrier()
dist.destroy_process_group()

"""Trains a two-layer graph convolutional network for node classification on a synthetic
stochastic-block-model graph with DistributedDataParallel on the gloo backend; each rank gets a
different half of the labelled training nodes. The model is wrapped in DDP, but the training step
calls `model.module(...)` (a habit from code that unwraps the model for evaluation). DDP only
arms its gradient all-reduce inside DistributedDataParallel.forward, so the backward pass does no
communication: every rank steps on its own local gradient and the replicas silently drift apart.
No error, no warning; each rank's loss goes down on its own shard.

doctor-command: python -m torch.distributed.run --standalone --nproc-per-node 2 ddp_gcn_forward_through_module.py

Source: https://github.com/k2-fsa/icefall/issues/226
"""

import gc

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)

N, C, F = 120, 3, 8
comm = torch.arange(N) % C
p_in, p_out = 0.15, 0.02
prob = torch.where(comm[:, None] == comm[None, :], p_in, p_out)
adj = (torch.rand(N, N) < prob).float()
adj = ((adj + adj.T) > 0).float() + torch.eye(N)
deg = adj.sum(1)
a_hat = adj / torch.sqrt(deg[:, None] * deg[None, :])
feats = torch.randn(N, F) + nn.functional.one_hot(comm, F).float() * 0.5
train_nodes = torch.randperm(N)[:80]
my_nodes = train_nodes[rank::world]


class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(F, 32)
        self.l2 = nn.Linear(32, C)

    def forward(self, a, x):
        h = torch.relu(a @ self.l1(x))
        return a @ self.l2(h)


torch.manual_seed(100 + rank)  # replicas start different; DDP broadcasts rank 0's weights
model = DDP(GCN())
opt = torch.optim.Adam(model.parameters(), lr=0.01)
for step in range(30):
    logits = model.module(a_hat, feats)  # BUG-LINE
    loss = nn.functional.cross_entropy(logits[my_nodes], comm[my_nodes])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0 and rank == 0:
        print(f"step {step} loss {loss.item():.4f}")

w = model.module.l1.weight.detach().clone()
others = [torch.zeros_like(w) for _ in range(world)]
dist.all_gather(others, w)
if rank == 0:
    print(f"max weight difference between ranks {(others[0] - others[1]).abs().max().item():.2e}")

del model
gc.collect()
dist.barrier()
dist.destroy_process_group()

"""Trains a matrix-factorization recommender on implicit feedback with DistributedDataParallel on
gloo. Training batches are drawn on the fly: each step samples (user, positive item, random
negative item) triples with torch's global RNG, which every rank seeded with the same constant.
All ranks therefore draw exactly the same triples every step, so the two replicas compute
identical gradients and the all-reduce averages a batch with itself: half of the compute is
wasted and the effective batch is one rank's batch. No error or warning; the loss decreases.

doctor-command: python -m torch.distributed.run --standalone --nproc-per-node 2 ddp_recsys_identical_sampling_seed.py

Source: https://github.com/facebookresearch/detr/issues/297
"""

import gc

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
U, I, D, B = 200, 300, 16, 64
g = torch.Generator().manual_seed(1234)
true_u, true_i = torch.randn(U, 4, generator=g), torch.randn(I, 4, generator=g)
liked = [torch.topk(true_i @ true_u[u], 20).indices for u in range(U)]


class MF(nn.Module):
    def __init__(self):
        super().__init__()
        self.u = nn.Embedding(U, D)
        self.i = nn.Embedding(I, D)

    def forward(self, users, items):
        return (self.u(users) * self.i(items)).sum(-1)


model = DDP(MF())
opt = torch.optim.Adam(model.parameters(), lr=0.02)
torch.manual_seed(7)  # BUG-LINE
for step in range(40):
    users = torch.randint(0, U, (B,))
    pos = torch.stack([liked[u][torch.randint(0, 20, ())] for u in users.tolist()])
    neg = torch.randint(0, I, (B,))
    items = torch.cat([pos, neg])
    scores = model(torch.cat([users, users]), items)
    pos_s, neg_s = scores[:B], scores[B:]
    loss = -nn.functional.logsigmoid(pos_s - neg_s).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"rank {rank} step {step} loss {loss.item():.4f} first user {users[0].item()}")

del model
gc.collect()
dist.barrier()
dist.destroy_process_group()

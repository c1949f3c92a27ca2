"""Trains a small text-classification bag-of-embeddings model with DDP on gloo (2 processes) using gradient
accumulation over 4 micro-batches. The first 3 micro-batches run forward AND backward inside model.no_sync(), so
gradients accumulate locally without communication; the 4th runs outside it, which triggers one all-reduce of the
accumulated gradients. Each micro-batch loss is divided by the accumulation count so the step matches a large-batch
mean. A final check confirms the parameters are identical on both ranks.

doctor-command: python -m torch.distributed.run --standalone --nproc-per-node 2 ddp_gloo_grad_accumulation_no_sync_micro_batches.py

Source: https://github.com/speechbrain/speechbrain/pull/2010
"""

import contextlib
import gc

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
V, ACC = 100, 4


class BagClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(V, 32, mode="mean")
        self.out = nn.Linear(32, 2)

    def forward(self, ids):
        return self.out(self.emb(ids))


model = DDP(BagClassifier())
opt = torch.optim.AdamW(model.parameters(), lr=5e-3)
g = torch.Generator().manual_seed(10 + rank)
for step in range(8):
    opt.zero_grad()
    for micro in range(ACC):
        ids = torch.randint(0, V, (8, 12), generator=g)
        y = (ids < 30).float().mean(1).gt(0.3).long()
        ctx = model.no_sync() if micro < ACC - 1 else contextlib.nullcontext()
        with ctx:
            loss = nn.functional.cross_entropy(model(ids), y) / ACC
            loss.backward()
    opt.step()
w = model.module.out.weight.detach().clone()
w0 = w.clone()
dist.broadcast(w0, src=0)
if rank == 1:
    print("replicas in sync:", bool(torch.allclose(w, w0)), "last micro loss:", round(loss.item() * ACC, 4))
del model
gc.collect()
dist.barrier()
dist.destroy_process_group()

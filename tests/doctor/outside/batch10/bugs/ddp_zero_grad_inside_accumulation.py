"""Trains a bag-of-embeddings text classifier (synthetic keyword sentiment) with
DistributedDataParallel on gloo and 4-step gradient accumulation: the first three micro-batches
run under model.no_sync() and the fourth synchronizes and steps. The optimizer.zero_grad() call
sits inside the micro-batch loop, right before each backward, so every micro-batch wipes the
gradients accumulated by the previous ones. Each optimizer step therefore uses only the last
micro-batch (a quarter of the intended batch, with a loss still divided by 4). No error or warning.

doctor-command: python -m torch.distributed.run --standalone --nproc-per-node 2 ddp_zero_grad_inside_accumulation.py

Source: https://github.com/PrimeIntellect-ai/prime-diloco/pull/178
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
V, T, ACC, MB = 50, 12, 4, 16
gen = torch.Generator().manual_seed(10 + rank)


def micro_batch():
    ids = torch.randint(0, V, (MB, T), generator=gen)
    labels = ((ids < 10).sum(1) > (ids >= 40).sum(1)).long()
    return ids, labels


model = DDP(nn.Sequential(nn.EmbeddingBag(V, 32, mode="mean"), nn.Linear(32, 2)))
opt = torch.optim.SGD(model.parameters(), lr=0.5)
for step in range(25):
    total = 0.0
    for micro in range(ACC):
        ids, labels = micro_batch()
        ctx = model.no_sync() if micro < ACC - 1 else contextlib.nullcontext()
        with ctx:
            loss = nn.functional.cross_entropy(model(ids), labels) / ACC
            opt.zero_grad()  # BUG-LINE
            loss.backward()
        total += loss.item()
    opt.step()
    if rank == 0 and step % 5 == 0:
        print(f"step {step} loss {total:.4f}")

del model
gc.collect()
dist.barrier()
dist.destroy_process_group()

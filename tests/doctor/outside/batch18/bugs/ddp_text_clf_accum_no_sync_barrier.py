"""DDP gradient accumulation where every micro-batch runs under ``no_sync``.

Source: https://github.com/pytorch/pytorch/issues/53443

The author wraps all accumulation micro-batches in ``ddp.no_sync()`` and then
tries to "synchronize" with a device/process synchronisation call (here a
``dist.barrier()``) instead of running the last forward/backward outside the
context.  A barrier does not all-reduce gradients, so each rank steps with its
own local gradient.  The replicas silently drift apart (each learns only from
its own shard), yet every rank prints a decreasing loss.
"""

import os
import random

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

VOCAB, CLASSES, SEQ = 200, 4, 12
ACCUM, MICRO_BS, STEPS = 4, 8, 40


class BagOfWordsClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(VOCAB, 32, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, CLASSES))

    def forward(self, ids):
        return self.mlp(self.bag(ids))


def make_shard(rank, n, gen):
    # class c prefers tokens in band [c*50, c*50+50); each rank sees a skewed class mix
    labels = torch.randint(0, CLASSES, (n,), generator=gen)
    labels = torch.where(torch.rand(n, generator=gen) < 0.6, torch.full_like(labels, rank * 2), labels)
    base = labels.unsqueeze(1) * 50
    ids = base + torch.randint(0, 50, (n, SEQ), generator=gen)
    noise = torch.rand(n, SEQ, generator=gen) < 0.4
    ids = torch.where(noise, torch.randint(0, VOCAB, (n, SEQ), generator=gen), ids)
    return ids, labels


def accumulate_and_step(ddp_model, opt, micro_batches):
    with ddp_model.no_sync():  # BUG-LINE
        for ids, y in micro_batches:
            loss = F.cross_entropy(ddp_model(ids), y) / len(micro_batches)
            loss.backward()
    dist.barrier()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss.item() * len(micro_batches)


def worker(rank, world, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = DDP(BagOfWordsClassifier())
    opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    gen = torch.Generator().manual_seed(100 + rank)
    ids, labels = make_shard(rank, ACCUM * MICRO_BS * STEPS, gen)
    ptr = 0
    for step in range(STEPS):
        mbs = []
        for _ in range(ACCUM):
            mbs.append((ids[ptr : ptr + MICRO_BS], labels[ptr : ptr + MICRO_BS]))
            ptr += MICRO_BS
        loss = accumulate_and_step(model, opt, mbs)
        if step % 10 == 0 or step == STEPS - 1:
            print(f"[rank {rank}] step {step:2d} loss {loss:.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    port = 29500 + random.randint(0, 2000)
    mp.spawn(worker, args=(2, port), nprocs=2, join=True)

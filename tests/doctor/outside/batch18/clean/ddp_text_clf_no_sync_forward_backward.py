"""DDP gradient accumulation with ``no_sync`` wrapped around forward *and* backward.

Source: https://github.com/huggingface/accelerate/pull/1726

The PR documents that DDP's ``no_sync`` only takes effect if the *forward*
pass runs inside the context, and that gradients are all-reduced by the
backward of the first forward that runs outside it.  Here the first ACCUM-1
micro-batches run forward+backward inside ``no_sync`` (local accumulation
only), and the last micro-batch runs outside the context so its backward
all-reduces the accumulated gradients before ``optimizer.step()``.  A check at
the end confirms both replicas hold identical weights.  Unusual parts: two
processes over gloo, skipped communication on purpose, per-rank data shards.
"""

import contextlib
import os
import random

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

VOCAB, CLASSES, SEQ = 200, 4, 12
ACCUM, MICRO_BS, STEPS = 4, 8, 30


class BagOfWordsClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(VOCAB, 32, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, CLASSES))

    def forward(self, ids):
        return self.mlp(self.bag(ids))


def make_shard(n, gen):
    labels = torch.randint(0, CLASSES, (n,), generator=gen)
    ids = labels.unsqueeze(1) * 50 + torch.randint(0, 50, (n, SEQ), generator=gen)
    noise = torch.rand(n, SEQ, generator=gen) < 0.4
    ids = torch.where(noise, torch.randint(0, VOCAB, (n, SEQ), generator=gen), ids)
    return ids, labels


def worker(rank, world, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = DDP(BagOfWordsClassifier())
    opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    ids, labels = make_shard(ACCUM * MICRO_BS * STEPS, torch.Generator().manual_seed(100 + rank))
    ptr = 0
    for step in range(STEPS):
        total = 0.0
        for micro in range(ACCUM):
            x, y = ids[ptr : ptr + MICRO_BS], labels[ptr : ptr + MICRO_BS]
            ptr += MICRO_BS
            last = micro == ACCUM - 1
            ctx = contextlib.nullcontext() if last else model.no_sync()
            with ctx:
                loss = F.cross_entropy(model(x), y) / ACCUM
                loss.backward()
            total += loss.item()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step % 10 == 0 or step == STEPS - 1:
            print(f"[rank {rank}] step {step:2d} loss {total:.4f}", flush=True)
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    if rank == 0:
        print("replicas identical:", torch.allclose(gathered[0], gathered[1]))
    dist.destroy_process_group()


if __name__ == "__main__":
    port = 29500 + random.randint(0, 2000)
    mp.spawn(worker, args=(2, port), nprocs=2, join=True)

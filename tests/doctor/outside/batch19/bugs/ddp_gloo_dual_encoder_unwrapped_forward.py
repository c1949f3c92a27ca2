"""Dual-encoder (query/document) retrieval model trained with in-batch negatives under DDP (gloo).

The training step unwraps the DistributedDataParallel model (a helper written for saving and
for calling custom methods) and runs the loss-bearing forward on the raw module. DDP arms its
gradient all-reduce hooks inside DistributedDataParallel.forward(); when forward goes straight
to `.module`, backward() performs no all-reduce at all. Each rank silently steps on its own
local gradients, the replicas drift apart, and "multi-process" training is really N independent
runs on 1/N of the data each. No error or warning is raised.

Source: https://github.com/huggingface/trl/issues/7245
"""

import os
import random

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD_SIZE = 2
VOCAB, DIM, SEQ = 500, 32, 8


class BagEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(VOCAB, DIM, mode="mean")
        self.proj = nn.Sequential(nn.Linear(DIM, DIM), nn.ReLU(), nn.Linear(DIM, DIM))

    def forward(self, tokens):
        return F.normalize(self.proj(self.emb(tokens)), dim=-1)


class DualEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_enc = BagEncoder()
        self.d_enc = BagEncoder()
        self.logit_scale = nn.Parameter(torch.tensor(2.3))

    def forward(self, q, d):
        return self.q_enc(q), self.d_enc(d), self.logit_scale.exp()


def unwrap_model(model):
    return model.module if isinstance(model, DDP) else model


def in_batch_loss(q, d, scale):
    logits = scale * q @ d.t()
    labels = torch.arange(q.shape[0])
    return F.cross_entropy(logits, labels)


def make_pairs(n, seed):
    g = torch.Generator().manual_seed(seed)
    topics = torch.randint(0, 50, (n,), generator=g)
    q = (topics[:, None] * 10 + torch.randint(0, 10, (n, SEQ), generator=g)) % VOCAB
    d = (topics[:, None] * 10 + torch.randint(0, 10, (n, SEQ), generator=g)) % VOCAB
    return q, d


def compute_loss(model, batch):
    raw_model = unwrap_model(model)  # BUG-LINE
    q, d, scale = raw_model(*batch)
    return in_batch_loss(q, d, scale)


def worker(rank, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD_SIZE)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = DDP(DualEncoder())
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    q_all, d_all = make_pairs(4096, seed=100 + rank)  # each rank holds its own shard
    for step in range(120):
        idx = torch.randint(0, q_all.shape[0], (64,))
        loss = compute_loss(model, (q_all[idx], d_all[idx]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and (step % 20 == 0 or step == 119):
            print(f"step {step:3d} loss {loss.item():.4f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


def main():
    torch.manual_seed(0)
    torch.set_num_threads(2)
    port = 29500 + random.randint(0, 2000)
    mp.spawn(worker, args=(port,), nprocs=WORLD_SIZE, join=True)


if __name__ == "__main__":
    main()

"""Dual-encoder retrieval under DDP (gloo) with cross-rank negatives (correct, unusual).

Each rank embeds its local queries and documents, then all_gathers the *document* embeddings of
every rank so that each query is scored against the global batch. torch.distributed.all_gather
does not carry gradients, so the gathered list gets this rank's own tensor put back in its slot
(the "local loss, gather with grad for the local shard" pattern): gradients flow through the
local documents and queries, the other ranks' documents act as constant negatives, and DDP's
all-reduce (the forward goes through the DDP wrapper) averages the gradients. Labels are offset
by rank * local_batch. Gathering without the put-back, or forgetting the label offset, would be
the classic mistakes here.

Source: https://github.com/mlfoundations/open_clip/issues/616
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
VOCAB, DIM, SEQ, LOCAL_BS = 500, 32, 8, 32


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
        self.q_enc, self.d_enc = BagEncoder(), BagEncoder()

    def forward(self, q, d):
        return self.q_enc(q), self.d_enc(d)


def gather_with_local_grad(t):
    gathered = [torch.zeros_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, t.detach())
    gathered[dist.get_rank()] = t
    return torch.cat(gathered, dim=0)


def make_pairs(n, seed):
    g = torch.Generator().manual_seed(seed)
    topics = torch.randint(0, 50, (n,), generator=g)
    q = (topics[:, None] * 10 + torch.randint(0, 10, (n, SEQ), generator=g)) % VOCAB
    d = (topics[:, None] * 10 + torch.randint(0, 10, (n, SEQ), generator=g)) % VOCAB
    return q, d


def worker(rank, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD_SIZE)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = DDP(DualEncoder())
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    q_all, d_all = make_pairs(4096, seed=100 + rank)
    temperature = 0.05
    for step in range(120):
        idx = torch.randint(0, q_all.shape[0], (LOCAL_BS,))
        q, d = model(q_all[idx], d_all[idx])
        d_global = gather_with_local_grad(d)
        logits = q @ d_global.t() / temperature
        labels = torch.arange(LOCAL_BS) + rank * LOCAL_BS
        loss = F.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and (step % 20 == 0 or step == 119):
            print(f"step {step:3d} loss {loss.item():.4f}", flush=True)
    w = model.module.q_enc.proj[0].weight.detach().clone()
    ws = [torch.zeros_like(w) for _ in range(WORLD_SIZE)]
    dist.all_gather(ws, w)
    if rank == 0:
        print(f"replica max weight difference: {(ws[0] - ws[1]).abs().max().item():.2e}")
    dist.destroy_process_group()


def main():
    torch.manual_seed(0)
    torch.set_num_threads(2)
    port = 29500 + random.randint(2001, 4000)
    mp.spawn(worker, args=(port,), nprocs=WORLD_SIZE, join=True)


if __name__ == "__main__":
    main()

"""DDP (gloo, 2 processes) gradient accumulation with no_sync on the wrong micro-batches.

Gradient accumulation over 4 micro-batches uses `no_sync()` to skip the all-reduce on
intermediate micro-batches. The condition is written as `batch_idx % accum != 0`, so the
all-reduce happens on the *first* micro-batch of each window and the final micro-batch (the
one before optimizer.step) runs under no_sync. Gradients from the last three micro-batches
stay rank-local, the ranks apply different updates and the replicas drift apart.

Source: https://github.com/huggingface/picotron/pull/5
"""

import contextlib
import os
import random
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

V, T, ACCUM = 50, 16, 4


class TinyCausalLM(nn.Module):
    def __init__(self, vocab, max_len, d=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        layer = nn.TransformerEncoderLayer(d, 2, 64, dropout=0.0, batch_first=True)
        self.body = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        t = ids.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(t)
        h = self.tok(ids) + self.pos(torch.arange(t))
        return self.head(self.body(h, mask=mask, is_causal=True))


def lm_loss(logits, ids):
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


def worker(rank, world, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = TinyCausalLM(V, T)
    ddp = DDP(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=2e-3)
    g = torch.Generator().manual_seed(7 + rank)
    opt.zero_grad()
    for batch_idx in range(48):
        start = torch.randint(0, V, (8, 1), generator=g)
        ids = (start + torch.arange(T) * 2) % V
        skip = batch_idx % ACCUM != 0  # BUG-LINE
        ctx = ddp.no_sync() if skip else contextlib.nullcontext()
        with ctx:
            loss = lm_loss(ddp(ids), ids) / ACCUM
            loss.backward()
        if (batch_idx + 1) % ACCUM == 0:
            opt.step()
            opt.zero_grad()
        if batch_idx % 16 == 0 and rank == 0:
            print(f"micro-batch {batch_idx} loss {loss.item() * ACCUM:.4f}")
    w = model.head.weight.detach().clone()
    ws = [torch.zeros_like(w) for _ in range(world)]
    dist.all_gather(ws, w)
    if rank == 0:
        print(f"max weight difference between ranks {(ws[0] - ws[1]).abs().max().item():.5f}")
    dist.destroy_process_group()


def free_port():
    while True:
        port = 29500 + random.randint(0, 20000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue


if __name__ == "__main__":
    torch.manual_seed(0)
    torch.set_num_threads(2)
    mp.spawn(worker, args=(2, free_port()), nprocs=2, join=True)

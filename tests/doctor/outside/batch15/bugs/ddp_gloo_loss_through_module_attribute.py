"""DDP (gloo, 2 processes) training of a tiny causal transformer LM where the forward goes through `.module`.

The model is wrapped in DistributedDataParallel, but the training step calls
`ddp_model.module(...)`, i.e. the unwrapped model. DDP's reducer hooks are only prepared by
the wrapper's forward, so no gradient all-reduce happens: each rank trains its own replica
on its own shard and the replicas silently drift apart. Loss falls on every rank.

Source: https://github.com/SchmiedmayerLab/OpenTSLM/pull/49
"""

import os
import random
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

V, T = 50, 16


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
    ddp_model = DDP(model)
    opt = torch.optim.AdamW(ddp_model.parameters(), lr=2e-3)
    g = torch.Generator().manual_seed(100 + rank)
    for it in range(60):
        start = torch.randint(0, V, (8, 1), generator=g)
        ids = (start + torch.arange(T) * (rank + 1)) % V
        loss = lm_loss(ddp_model.module(ids), ids)  # BUG-LINE
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 20 == 0 and rank == 0:
            print(f"step {it} loss {loss.item():.4f}")
    w = model.tok.weight.detach().clone()
    other = [torch.zeros_like(w) for _ in range(world)]
    dist.all_gather(other, w)
    if rank == 0:
        print(f"max weight difference between ranks {(other[0] - other[1]).abs().max().item():.5f}")
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

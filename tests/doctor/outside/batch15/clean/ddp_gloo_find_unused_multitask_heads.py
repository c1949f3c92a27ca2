"""DDP (gloo, 2 processes) multi-task model where each step uses only one of two heads, so
find_unused_parameters=True is required.

Unusual on purpose: a shared tiny causal transformer feeds an LM head and a sequence
classification head. Steps alternate between tasks (the same task on every rank at a given
step), so on every step one head receives no gradient; DDP is built with
find_unused_parameters=True so the reducer marks the idle head ready instead of waiting for
it. The program checks both replicas stay identical and both heads are trained.

Source: https://github.com/EvolvingLMMs-Lab/OneVision-Encoder/pull/68
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

V, T = 40, 12


class MultiTask(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.tok = nn.Embedding(V, d)
        self.pos = nn.Embedding(T, d)
        layer = nn.TransformerEncoderLayer(d, 2, 64, dropout=0.0, batch_first=True)
        self.body = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.lm_head = nn.Linear(d, V)
        self.cls_head = nn.Linear(d, 2)

    def forward(self, ids, task):
        mask = nn.Transformer.generate_square_subsequent_mask(T)
        h = self.body(self.tok(ids) + self.pos(torch.arange(T)), mask=mask, is_causal=True)
        return self.lm_head(h) if task == "lm" else self.cls_head(h[:, -1])


def worker(rank, world, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = MultiTask()
    cls_before = model.cls_head.weight.detach().clone()
    ddp = DDP(model, find_unused_parameters=True)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(11 + rank)
    for it in range(60):
        task = "lm" if it % 2 == 0 else "cls"
        ids = (torch.randint(0, V, (8, 1), generator=g) + 3 * torch.arange(T)) % V
        if task == "lm":
            out = ddp(ids, task)
            loss = F.cross_entropy(out[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))
        else:
            y = (ids[:, 0] < V // 2).long()
            loss = F.cross_entropy(ddp(ids, task), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and it % 20 >= 18:
            print(f"step {it} task {task} loss {loss.item():.4f}")
    w = torch.cat([p.detach().flatten() for p in model.parameters()])
    ws = [torch.zeros_like(w) for _ in range(world)]
    dist.all_gather(ws, w)
    if rank == 0:
        print(
            f"replica diff {(ws[0] - ws[1]).abs().max().item():.2e}, "
            f"cls head moved {(model.cls_head.weight - cls_before).abs().max().item():.3f}"
        )
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

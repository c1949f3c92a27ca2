"""DDP (gloo, 2 processes) gradient accumulation with no_sync on all but the last micro-batch,
a DistributedSampler reshuffled every epoch, and loss scaled by 1/accum.

Unusual on purpose: the forward AND backward of micro-batches 1..accum-1 run inside
`ddp.no_sync()` so gradients accumulate locally; the last micro-batch of each window runs
outside it, which all-reduces the whole accumulated gradient once before optimizer.step().
`sampler.set_epoch(epoch)` is called every epoch so the shards change. The program checks
that both replicas hold identical weights at the end.

Source: https://github.com/goodfire-ai/spd/pull/216
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
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

V, T, ACCUM = 40, 12, 3


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
        return self.head(self.body(self.tok(ids) + self.pos(torch.arange(t)), mask=mask, is_causal=True))


def worker(rank, world, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    data = (torch.randint(0, V, (144, 1)) + 2 * torch.arange(T)) % V
    sampler = DistributedSampler(TensorDataset(data), num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(TensorDataset(data), batch_size=8, sampler=sampler)
    model = TinyCausalLM(V, T)
    ddp = DDP(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        opt.zero_grad()
        for i, (ids,) in enumerate(loader):
            last = (i + 1) % ACCUM == 0
            with contextlib.nullcontext() if last else ddp.no_sync():
                logits = ddp(ids)
                loss = F.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1)) / ACCUM
                loss.backward()
            if last:
                opt.step()
                opt.zero_grad()
        if rank == 0:
            print(f"epoch {epoch} loss {loss.item() * ACCUM:.4f}")
    w = model.head.weight.detach().clone()
    ws = [torch.zeros_like(w) for _ in range(world)]
    dist.all_gather(ws, w)
    if rank == 0:
        print(f"max weight difference between ranks {(ws[0] - ws[1]).abs().max().item():.2e}")
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

"""Deep & Cross Network CTR model trained with DDP (gloo, 2 ranks) and gradient accumulation via no_sync.

Unusual on purpose: each rank runs ACCUM micro-batches per optimizer step. The first ACCUM-1
backward passes run inside `with model.no_sync():`, so their gradients only accumulate locally and
no all-reduce happens; the last micro-batch's backward runs outside no_sync and triggers one
all-reduce of the accumulated gradient. Each micro-batch loss is divided by ACCUM so the update
equals a large-batch mean. The cross layers compute x0 * (w . x) + b + x, a multiplicative feature
interaction, and DistributedSampler.set_epoch is called every epoch. Modelled on the page
explaining that in real DDP the intermediate backward passes must be wrapped in model.no_sync()
and the final backward left outside it.

Source: https://theneuralbase.com/pytorch/learn/advanced/gradient-synchronization-how-it-works/
"""

import os
import random

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

N_FIELDS, VOCAB, EMB, ACCUM, EPOCHS = 6, 50, 8, 4, 5


def make_data(n=4096):
    g = torch.Generator().manual_seed(0)
    cats = torch.randint(0, VOCAB, (n, N_FIELDS), generator=g)
    w = torch.randn(N_FIELDS, VOCAB, generator=g)
    lin = sum(w[f, cats[:, f]] for f in range(N_FIELDS))
    inter = w[0, cats[:, 0]] * w[1, cats[:, 1]] - w[2, cats[:, 2]] * w[3, cats[:, 3]]
    p = torch.sigmoid(0.6 * lin + 1.0 * inter - 0.5)
    y = torch.bernoulli(p, generator=g)
    return TensorDataset(cats, y)


class CrossLayer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Linear(d, 1, bias=False)
        self.b = nn.Parameter(torch.zeros(d))

    def forward(self, x0, x):
        return x0 * self.w(x) + self.b + x


class DCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(N_FIELDS * VOCAB, EMB)
        d = N_FIELDS * EMB
        self.cross = nn.ModuleList(CrossLayer(d) for _ in range(2))
        self.deep = nn.Sequential(nn.Linear(d, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU())
        self.out = nn.Linear(d + 32, 1)
        self.register_buffer("offsets", torch.arange(N_FIELDS) * VOCAB)

    def forward(self, cats):
        x0 = self.emb(cats + self.offsets).flatten(1)
        x = x0
        for layer in self.cross:
            x = layer(x0, x)
        return self.out(torch.cat([x, self.deep(x0)], dim=1)).squeeze(1)


def worker(rank, world, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    ds = make_data()
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True)
    loader = DataLoader(ds, batch_size=64, sampler=sampler, drop_last=True)
    model = DDP(DCN())
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.BCEWithLogitsLoss()
    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)
        total, n = 0.0, 0
        opt.zero_grad()
        for i, (cats, y) in enumerate(loader):
            last = (i + 1) % ACCUM == 0
            if last:
                loss = loss_fn(model(cats), y) / ACCUM
                loss.backward()
                opt.step()
                opt.zero_grad()
            else:
                with model.no_sync():
                    loss = loss_fn(model(cats), y) / ACCUM
                    loss.backward()
            total += loss.item() * ACCUM
            n += 1
        if rank == 0:
            print(f"epoch {epoch} mean_bce {total / n:.4f}")
    w = model.module.out.weight.detach().clone()
    gathered = [torch.zeros_like(w) for _ in range(world)]
    dist.all_gather(gathered, w)
    if rank == 0:
        print("replicas in sync:", torch.allclose(gathered[0], gathered[1]))
    dist.destroy_process_group()


def main():
    port = 29500 + random.randint(0, 2000)
    mp.spawn(worker, args=(2, port), nprocs=2, join=True)


if __name__ == "__main__":
    main()

"""Two-process DDP (gloo, CPU) image classifier trained with gradient accumulation.

Unusual but correct: each optimizer step accumulates ACCUM micro-batches. For the
first ACCUM-1 micro-batches both forward and backward run inside ddp_model.no_sync(),
so DDP skips the gradient all-reduce and gradients just accumulate locally; the last
micro-batch runs outside no_sync(), so its backward all-reduces the full accumulated
gradient once. Each micro-batch loss is divided by ACCUM, a DistributedSampler shards
the data and set_epoch() reshuffles it every epoch, and the (already averaged)
gradients are clipped before the step. Parameters stay identical on all ranks.

Source: https://github.com/pytorch/pytorch/issues/43201
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
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

WORLD, ACCUM, EPOCHS = 2, 4, 6


def make_data(n=1536):
    g = torch.Generator().manual_seed(0)
    protos = torch.randn(6, 3, 12, 12, generator=g)
    y = torch.randint(0, 6, (n,), generator=g)
    x = protos[y] + 1.2 * torch.randn(n, 3, 12, 12, generator=g)
    return TensorDataset(x, y)


def build_model():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, 6),
    )


def worker(rank, world, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    ds = make_data()
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=0)
    dl = DataLoader(ds, batch_size=16, sampler=sampler, drop_last=True)
    model = DDP(build_model())
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    step = 0
    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)
        opt.zero_grad()
        for i, (x, y) in enumerate(dl):
            last_micro = (i + 1) % ACCUM == 0
            ctx = contextlib.nullcontext() if last_micro else model.no_sync()
            with ctx:
                loss = F.cross_entropy(model(x), y) / ACCUM
                loss.backward()
            if last_micro:
                nn.utils.clip_grad_norm_(model.parameters(), 5.0)
                opt.step()
                opt.zero_grad()
                step += 1
                if rank == 0 and step % 12 == 0:
                    print(f"epoch {epoch} opt_step {step:3d} loss {loss.item() * ACCUM:.4f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


def main():
    torch.manual_seed(0)
    torch.set_num_threads(2)
    port = 29500 + random.Random(os.getpid() + 7).randint(0, 2000)
    mp.spawn(worker, args=(WORLD, port), nprocs=WORLD, join=True)


if __name__ == "__main__":
    main()

"""Data-parallel demand forecaster with hand-written gradient averaging over gloo.

Instead of wrapping the model in DistributedDataParallel, each worker averages
gradients itself (all_reduce SUM, then divide by world size) before
optimizer.step().  The script seeds every process with base_seed + rank so that
the workers draw different mini-batches, and it builds the model after seeding.
Because there is no initial broadcast of the parameters (DDP would do this in
its constructor), every replica starts from a different random initialisation.
The averaged gradient is applied identically everywhere, so the replicas keep
their initial offset forever: each worker's loss plateaus above what a single
synchronized model reaches, and the model rank 0 saves is not the model the
averaged gradients were computed for.  No error or warning is produced.

Source: https://github.com/pytorch/examples/issues/483
"""

import os
import random

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

WORLD_SIZE = 2
BASE_SEED = 1234
STEPS = 200
LAGS = 12


def demand_batch(batch, gen):
    base = torch.rand(batch, 1, generator=gen) * 10
    season = torch.sin(torch.arange(LAGS + 1).float() * 0.5 + torch.rand(batch, 1, generator=gen) * 6.28)
    series = base + 2 * season + 0.1 * torch.randn(batch, LAGS + 1, generator=gen)
    return series[:, :LAGS], series[:, LAGS:]


def build_model():
    return nn.Sequential(nn.Linear(LAGS, 32), nn.Tanh(), nn.Linear(32, 1))


def average_gradients(model, world_size):
    for p in model.parameters():
        dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
        p.grad /= world_size


def worker(rank, world_size, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(BASE_SEED + rank)  # BUG-LINE
    data_gen = torch.Generator().manual_seed(BASE_SEED + rank)
    model = build_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for step in range(STEPS):
        x, y = demand_batch(64, data_gen)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        average_gradients(model, world_size)
        opt.step()
        if step % 40 == 0 or step == STEPS - 1:
            flat = torch.cat([p.detach().flatten() for p in model.parameters()])
            others = [torch.zeros_like(flat) for _ in range(world_size)]
            dist.all_gather(others, flat)
            spread = (others[0] - others[-1]).norm().item()
            if rank == 0:
                print(f"step {step:3d} rank0 loss {loss.item():.4f} replica param spread {spread:.4f}")
    dist.destroy_process_group()


def main():
    torch.manual_seed(0)
    torch.set_num_threads(2)
    port = 29500 + random.randint(0, 2000)
    mp.spawn(worker, args=(WORLD_SIZE, port), nprocs=WORLD_SIZE, join=True)


if __name__ == "__main__":
    main()

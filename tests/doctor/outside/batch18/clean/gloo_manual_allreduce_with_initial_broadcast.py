"""Two-process gloo data-parallel training of a phoneme-frame classifier with hand-rolled synchronization.

Unusual but correct: no DistributedDataParallel wrapper.  Each worker seeds its
own data stream differently (so the ranks see different mini-batches), builds
the model, and then explicitly broadcasts every parameter and buffer from rank 0
so all replicas start identical.  After each backward the gradients are summed
with all_reduce and divided by the world size, so every replica applies the same
averaged update and the parameter spread between ranks stays exactly zero.

Source: https://github.com/PPPLDeepLearning/plasma-python/pull/34
"""

import os
import random

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

WORLD_SIZE, STEPS, N_MFCC, N_PHONES, CONTEXT = 2, 150, 13, 6, 5


def frames(batch, gen):
    y = torch.randint(0, N_PHONES, (batch,), generator=gen)
    centers = torch.linspace(-2, 2, N_PHONES).view(-1, 1) * torch.linspace(1, -1, N_MFCC).view(1, -1)
    x = centers[y].unsqueeze(1).expand(-1, CONTEXT, -1) + 0.8 * torch.randn(batch, CONTEXT, N_MFCC, generator=gen)
    return x.flatten(1), y


def build_model():
    return nn.Sequential(nn.Linear(CONTEXT * N_MFCC, 64), nn.LayerNorm(64), nn.ReLU(), nn.Linear(64, N_PHONES))


def worker(rank, world_size, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(100 + rank)
    gen = torch.Generator().manual_seed(100 + rank)
    model = build_model()
    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            dist.broadcast(t, src=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(STEPS):
        x, y = frames(32, gen)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
            p.grad.div_(world_size)
        opt.step()
        if step % 30 == 0 or step == STEPS - 1:
            flat = torch.cat([p.detach().flatten() for p in model.parameters()])
            gathered = [torch.zeros_like(flat) for _ in range(world_size)]
            dist.all_gather(gathered, flat)
            avg = loss.detach().clone()
            dist.all_reduce(avg)
            if rank == 0:
                print(
                    f"step {step:3d} mean loss {avg.item() / world_size:.4f} "
                    f"replica spread {(gathered[0] - gathered[1]).abs().max().item():.2e}"
                )
    dist.destroy_process_group()


def main():
    torch.manual_seed(0)
    torch.set_num_threads(2)
    port = 29500 + random.randint(2001, 4000)
    mp.spawn(worker, args=(WORLD_SIZE, port), nprocs=WORLD_SIZE, join=True)


if __name__ == "__main__":
    main()

"""DDP (gloo) gradient accumulation with no_sync, written for torchrun.

Unusual but correct: each optimizer step accumulates 4 micro-batches. The
first 3 backward passes run inside model.no_sync(), so gradients accumulate
locally without an all-reduce; the 4th backward runs outside the context and
all-reduces the whole accumulated gradient. Each micro-batch loss is divided
by the number of micro-steps so the update equals a large-batch mean.

Source: https://github.com/huggingface/accelerate/pull/106
"""

# doctor-command: torchrun --standalone --nproc-per-node 2 {program}
import contextlib

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

torch.manual_seed(0)
torch.set_num_threads(1)

ACCUM = 4


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    x = torch.randn(1024, 10)
    y = (x[:, :4].sum(1) > 0).long()
    ds = TensorDataset(x, y)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(ds, batch_size=16, sampler=sampler)
    model = DDP(nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)

    for epoch in range(3):
        sampler.set_epoch(epoch)
        total, n = 0.0, 0
        opt.zero_grad()
        for i, (xb, yb) in enumerate(loader):
            last_micro = (i + 1) % ACCUM == 0 or (i + 1) == len(loader)
            ctx = contextlib.nullcontext() if last_micro else model.no_sync()
            with ctx:
                loss = F.cross_entropy(model(xb), yb)
                (loss / ACCUM).backward()
            if last_micro:
                opt.step()
                opt.zero_grad()
            total += loss.item()
            n += 1
        if rank == 0:
            print(f"epoch {epoch} mean loss {total / n:.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""DDP (gloo, torchrun) with per-epoch reshuffling and no_sync gradient accumulation (correct).

Unusual but correct: the ``DistributedSampler`` gets ``set_epoch(epoch)`` at the
start of every epoch so each epoch is reshuffled consistently across ranks, and
gradient accumulation over ``ACCUM`` micro-batches wraps all but the last
micro-batch in ``ddp_model.no_sync()`` so the all-reduce only happens once per
optimizer step.  Losses are divided by ``ACCUM``; DDP itself averages over
ranks, so no extra division by world size is needed.  The epoch-level loss is
averaged across ranks with ``all_reduce`` for logging only.

Source: https://github.com/Spijkervet/SimCLR/pull/26
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
torch.set_num_threads(2)

ACCUM, EPOCHS, MICRO_BS = 2, 4, 32


def dataset(n=1024):
    g = torch.Generator().manual_seed(5)
    x = torch.randn(n, 16, generator=g)
    w = torch.randn(16, 3, generator=g)
    y = (x @ w).argmax(-1)
    return TensorDataset(x, y)


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    ds = dataset()
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(ds, batch_size=MICRO_BS, sampler=sampler, drop_last=True)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 3))
    ddp_model = DDP(model)
    opt = torch.optim.SGD(ddp_model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)
        first_idx = next(iter(sampler))
        total = torch.zeros(2)
        opt.zero_grad()
        for i, (x, y) in enumerate(loader):
            last_micro = (i + 1) % ACCUM == 0
            ctx = contextlib.nullcontext() if last_micro else ddp_model.no_sync()
            with ctx:
                loss = F.cross_entropy(ddp_model(x), y) / ACCUM
                loss.backward()
            if last_micro:
                opt.step()
                opt.zero_grad()
            total += torch.tensor([loss.item() * ACCUM * len(y), len(y)])
        dist.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch} mean loss {total[0] / total[1]:.4f} first sample index {first_idx}", flush=True)
    if rank == 0:
        x, y = ds.tensors
        with torch.no_grad():
            print(f"accuracy {(model(x).argmax(-1) == y).float().mean().item():.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""Trains a 1-D convolutional keyword spotter on synthetic "audio feature" sequences with
DistributedDataParallel on gloo and gradient accumulation over 4 micro-batches. Forward and
backward of the first three micro-batches run inside model.no_sync(), so gradients accumulate
locally without communication; the fourth micro-batch runs outside the context, and its backward
all-reduces the accumulated gradients once. Each micro-batch loss is divided by the number of
accumulation steps, zero_grad happens once per optimizer step, and gradient clipping is applied
after the synchronizing backward. Unusual-looking (several backward passes per step, skipped
syncs) but correct.

doctor-command: python -m torch.distributed.run --standalone --nproc-per-node 2 ddp_conv1d_keyword_no_sync_accumulation.py

Source: https://github.com/baidu-baige/LoongForge/pull/163
"""

import contextlib
import gc

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
F, T, ACC, MB = 13, 40, 4, 8
gen = torch.Generator().manual_seed(100 + rank)
pattern = torch.randn(F, 6, generator=torch.Generator().manual_seed(5))


def micro_batch():
    x = torch.randn(MB, F, T, generator=gen) * 0.5
    y = torch.randint(0, 2, (MB,), generator=gen)
    for i in range(MB):
        if y[i] == 1:
            s = int(torch.randint(0, T - 6, (1,), generator=gen))
            x[i, :, s : s + 6] += pattern
    return x, y


net = nn.Sequential(
    nn.Conv1d(F, 16, 5, padding=2),
    nn.ReLU(),
    nn.Conv1d(16, 16, 5, padding=2),
    nn.ReLU(),
    nn.AdaptiveMaxPool1d(1),
    nn.Flatten(),
    nn.Linear(16, 2),
)
model = DDP(net)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for step in range(20):
    opt.zero_grad()
    total = 0.0
    for micro in range(ACC):
        x, y = micro_batch()
        ctx = model.no_sync() if micro < ACC - 1 else contextlib.nullcontext()
        with ctx:
            loss = nn.functional.cross_entropy(model(x), y) / ACC
            loss.backward()
        total += loss.item()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if rank == 0 and step % 5 == 0:
        print(f"step {step} loss {total:.4f}")

del model
gc.collect()
dist.barrier()
dist.destroy_process_group()

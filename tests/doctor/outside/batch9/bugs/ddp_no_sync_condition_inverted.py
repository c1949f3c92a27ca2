"""DDP gradient accumulation wraps the wrong micro-batches in no_sync().

The condition `batch_idx % accum != 0` skips synchronisation on the last micro-batch before
optimizer.step() and synchronises the first one instead. Gradients from the final micro-batch
stay rank-local, so replicas apply different updates and diverge at the first optimizer step.
doctor-command: python -m torch.distributed.run --standalone --nproc-per-node 2 ddp_no_sync_condition_inverted.py
Source: https://github.com/modelscope/FunASR/pull/3472
"""

import contextlib
import gc

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
ddp = DDP(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
accum = 2
gen = torch.Generator().manual_seed(100 + rank)

for batch_idx in range(12):
    x = torch.randn(8, 8, generator=gen)
    y = x.sum(1, keepdim=True)
    ctx = ddp.no_sync() if batch_idx % accum != 0 else contextlib.nullcontext()  # BUG-LINE
    with ctx:
        loss = torch.nn.functional.mse_loss(ddp(x), y) / accum
        loss.backward()
    if (batch_idx + 1) % accum == 0:
        opt.step()
        opt.zero_grad()

w = model[0].weight.detach().clone()
ws = [torch.zeros_like(w) for _ in range(dist.get_world_size())]
dist.all_gather(ws, w)
if rank == 0:
    print(f"replica weight diff {(ws[0] - ws[1]).abs().max().item():.4e}")
del ddp, opt, model
gc.collect()
dist.barrier()
dist.destroy_process_group()

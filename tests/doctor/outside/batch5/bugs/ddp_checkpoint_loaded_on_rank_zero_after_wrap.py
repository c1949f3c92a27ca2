"""Resuming a DDP run, the script wraps the model in DDP first and then loads the checkpoint into
``ddp_model.module`` only on rank 0. DDP broadcast the weights at construction, before the load, so rank 1 keeps
its fresh random weights; gradients are averaged across two different models and the replicas never agree.

Source: https://discuss.pytorch.org/t/preferred-way-of-loading-checkpoint-with-ddp-training/187470
doctor-command: torchrun --standalone --nproc-per-node 2 {program}
"""

import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)


def make():
    return nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 3))


with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "ckpt.pt")
    torch.manual_seed(123)
    torch.save(make().state_dict(), path)
    torch.manual_seed(rank + 7)
    model = DDP(make())
    if rank == 0:
        model.module.load_state_dict(torch.load(path))  # BUG-LINE
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    torch.manual_seed(rank)
    for _step in range(5):
        x, y = torch.randn(16, 12), torch.randint(0, 3, (16,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.barrier()
del model
dist.barrier()
dist.destroy_process_group()

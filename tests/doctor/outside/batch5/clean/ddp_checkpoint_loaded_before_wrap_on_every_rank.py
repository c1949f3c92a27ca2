"""Resuming under DDP the recommended way: every rank loads the checkpoint into the plain local model and only
then wraps it in DDP, so all replicas start from the same checkpoint weights; the data differ per rank through
the seed. Loading on all ranks before wrapping is correct.

Source: https://discuss.pytorch.org/t/checkpointing-ddp-module-instead-of-ddp-itself/115714/2
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


def make():
    return nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 3))


with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, f"ckpt_{rank}.pt")
    torch.manual_seed(123)
    torch.save(make().state_dict(), path)
    local = make()
    local.load_state_dict(torch.load(path))
    model = DDP(local)
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

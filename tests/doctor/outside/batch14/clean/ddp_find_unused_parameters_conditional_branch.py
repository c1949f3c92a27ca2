"""DDP training (gloo, 2 processes) of a model whose forward skips a branch on some steps.

Unusual but correct: the model has an auxiliary head that is only used on even steps. With
`find_unused_parameters=True`, DDP traverses the autograd graph after each forward, marks the
auxiliary parameters as unused on odd steps and still finishes the all-reduce, so gradients stay
synchronised on every step. The branch choice depends only on the step number, so both ranks
take the same branch; replicas are checked to be identical at the end.

Source: https://github.com/pytorch/pytorch/issues/112152
"""

import os
import random

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(10, 32), nn.ReLU())
        self.main = nn.Linear(32, 3)
        self.aux = nn.Linear(32, 1)

    def forward(self, x, use_aux):
        h = self.trunk(x)
        out = self.main(h)
        aux = self.aux(h) if use_aux else None
        return out, aux


def run(rank, world_size, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = DDP(TwoHeads(), find_unused_parameters=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    gen = torch.Generator().manual_seed(50 + rank)
    proj = torch.randn(10, 3, generator=torch.Generator().manual_seed(9))

    for step in range(60):
        x = torch.randn(32, 10, generator=gen)
        y = (x @ proj).argmax(1)
        use_aux = step % 2 == 0
        logits, aux = model(x, use_aux)
        loss = F.cross_entropy(logits, y)
        if use_aux:
            loss = loss + 0.1 * F.mse_loss(aux.squeeze(1), x.norm(dim=1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 15 == 0 and rank == 0:
            print(f"step {step:2d} loss {loss.item():.4f} aux {'on' if use_aux else 'off'}")

    flat = torch.cat([p.detach().flatten() for p in model.module.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(world_size)]
    dist.all_gather(gathered, flat)
    if rank == 0:
        print(f"max parameter difference between replicas: {(gathered[0] - gathered[1]).abs().max().item():.3e}")
    dist.destroy_process_group()


if __name__ == "__main__":
    port = 29500 + random.randint(0, 2000)
    mp.spawn(run, args=(2, port), nprocs=2, join=True)

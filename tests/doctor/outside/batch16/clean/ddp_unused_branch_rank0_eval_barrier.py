"""Two-process DDP (gloo) with an auxiliary head used only on some steps,
set_epoch + drop_last sampling, and a rank-0-only evaluation behind a barrier.

Unusual but correct: the auxiliary head contributes to the loss only on even
steps, so DDP is built with find_unused_parameters=True (otherwise the
reducer would wait for gradients that never come). The DistributedSampler
uses shuffle=True and drop_last=True and set_epoch(epoch) is called every
epoch. Evaluation runs on rank 0 only, through model.module (the unwrapped
module, so no DDP collective is triggered in forward), under no_grad, and all
ranks meet at dist.barrier() afterwards.

Source: https://discuss.pytorch.org/t/torch-distributed-barrier-hangs-in-ddp/114522
"""

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

WORLD = 2


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 64), nn.ReLU())
        self.head = nn.Linear(64, 2)
        self.aux = nn.Linear(64, 1)

    def forward(self, x, use_aux):
        h = self.body(x)
        return self.head(h), (self.aux(h) if use_aux else None)


def run(rank, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.manual_seed(0)
    x = torch.randn(600, 16)
    y = (x[:, 0] * x[:, 1] + x[:, 2] > 0).long()
    aux_t = x[:, 3:4] * 2.0
    train = TensorDataset(x[:500], y[:500], aux_t[:500])
    sampler = DistributedSampler(train, num_replicas=WORLD, rank=rank, shuffle=True, drop_last=True, seed=0)
    loader = DataLoader(train, batch_size=25, sampler=sampler, drop_last=True)

    model = DDP(Net(), find_unused_parameters=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    step = 0
    for epoch in range(4):
        sampler.set_epoch(epoch)
        model.train()
        for xb, yb, ab in loader:
            use_aux = step % 2 == 0
            logits, aux = model(xb, use_aux)
            loss = F.cross_entropy(logits, yb)
            if use_aux:
                loss = loss + 0.1 * F.mse_loss(aux, ab)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
        if rank == 0:
            model.module.eval()
            with torch.no_grad():
                logits, _ = model.module(x[500:], False)
                acc = (logits.argmax(1) == y[500:]).float().mean().item()
                vloss = F.cross_entropy(logits, y[500:]).item()
            print(f"epoch {epoch} last train loss {loss.item():.4f} val loss {vloss:.4f} val acc {acc:.3f}")
        dist.barrier()
    dist.destroy_process_group()


def main():
    port = 29500 + random.randint(2001, 4000)
    mp.spawn(run, args=(port,), nprocs=WORLD, join=True)


if __name__ == "__main__":
    torch.manual_seed(0)
    torch.set_num_threads(2)
    main()

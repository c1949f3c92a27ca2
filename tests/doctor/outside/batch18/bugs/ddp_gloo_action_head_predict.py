"""Two-process DDP (gloo, CPU) fine-tuning of a small vision-feature backbone plus a
separately wrapped continuous 'action head' (L1 regression), as in VLA fine-tuning.

Both modules are wrapped in DistributedDataParallel, but the training step calls the
head through its .module attribute (action_head.module.predict_action(...)) instead of
through the DDP wrapper. DDP only arms its gradient all-reduce for a backward pass
inside DistributedDataParallel.forward(), so the head's gradients are never averaged
across ranks: each rank updates its own copy of the head from its local shard only, the
replicas silently diverge, and the head effectively trains with the per-rank batch.
No error or warning is produced.

Source: https://github.com/moojink/openvla-oft/issues/160
"""

import os
import random

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD_SIZE = 2
STEPS = 120


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(3, 8, 3, 2, 1),
            nn.ReLU(),
            nn.Conv2d(8, 16, 3, 2, 1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.proj = nn.Linear(16, 32)

    def forward(self, x):
        return self.proj(self.conv(x))


class L1RegressionActionHead(nn.Module):
    def __init__(self, hidden=32, action_dim=4):
        super().__init__()
        self.mlp = nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, 64), nn.ReLU(), nn.Linear(64, action_dim))

    def predict_action(self, h):
        return torch.tanh(self.mlp(h))

    def forward(self, h):
        return self.predict_action(h)


def make_shard(rank, n=512):
    g = torch.Generator().manual_seed(100 + rank)
    imgs = torch.randn(n, 3, 16, 16, generator=g)
    w = torch.randn(3, 4, generator=torch.Generator().manual_seed(7))
    actions = torch.tanh(imgs.mean(dim=(2, 3)) @ w * 2.0)
    return imgs, actions


def run(rank, world_size, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(0)
    torch.set_num_threads(1)

    backbone = DDP(Backbone())
    action_head = DDP(L1RegressionActionHead())
    params = list(backbone.parameters()) + list(action_head.parameters())
    opt = torch.optim.AdamW(params, lr=3e-3, weight_decay=0.0)
    imgs, actions = make_shard(rank)

    for step in range(STEPS):
        idx = torch.randint(0, len(imgs), (32,))
        h = backbone(imgs[idx])
        predicted_actions = action_head.module.predict_action(h)  # BUG-LINE
        loss = F.l1_loss(predicted_actions, actions[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and (step % 20 == 0 or step == STEPS - 1):
            print(f"step {step:3d} rank0 l1_loss {loss.item():.4f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


def main():
    torch.manual_seed(0)
    torch.set_num_threads(2)
    port = 29500 + random.Random(os.getpid()).randint(0, 2000)
    mp.spawn(run, args=(WORLD_SIZE, port), nprocs=WORLD_SIZE, join=True)


if __name__ == "__main__":
    main()

"""The face-embedding backbone is wrapped in DDP, but the ArcFace loss module, which owns the learnable class
centre matrix W, is not. Its gradients are never all-reduced, so every rank updates its own copy of W from
its local batch and the class centres silently diverge across replicas.

Source: https://github.com/KevinMusgrave/pytorch-metric-learning/issues/710
doctor-command: torchrun --standalone --nproc-per-node 2 {program}
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)


class ArcFaceLoss(nn.Module):
    def __init__(self, dim, n_classes, s=16.0, m=0.3):
        super().__init__()
        self.W = nn.Parameter(torch.randn(n_classes, dim) * 0.1)
        self.s, self.m = s, m

    def forward(self, emb, labels):
        cos = F.linear(F.normalize(emb), F.normalize(self.W)).clamp(-1 + 1e-6, 1 - 1e-6)
        theta = torch.acos(cos)
        target = torch.cos(theta + self.m)
        onehot = F.one_hot(labels, cos.size(1)).bool()
        return F.cross_entropy(self.s * torch.where(onehot, target, cos), labels)


backbone = DDP(nn.Sequential(nn.Linear(24, 64), nn.ReLU(), nn.Linear(64, 16)))
loss_fn = ArcFaceLoss(16, 8)  # BUG-LINE
opt = torch.optim.SGD(list(backbone.parameters()) + list(loss_fn.parameters()), lr=0.1)
g = torch.Generator().manual_seed(100 + rank)
for _step in range(5):
    x, yb = torch.randn(16, 24, generator=g), torch.randint(0, 8, (16,), generator=g)
    loss = loss_fn(backbone(x), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
del backbone
dist.barrier()
dist.destroy_process_group()

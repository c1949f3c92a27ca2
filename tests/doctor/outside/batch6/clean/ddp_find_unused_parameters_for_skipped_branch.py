"""A DDP model has an auxiliary head that is only used on every other step; the wrapper is built with
``find_unused_parameters=True`` so the reducer marks the skipped head's parameters ready instead of waiting
for their gradients. The head getting no gradient on odd steps is intended, and replicas stay identical.

Source: https://github.com/joanaapa/Distillation-DNABERT-Promoter/issues/1
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


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(10, 32), nn.ReLU())
        self.main_head, self.aux_head = nn.Linear(32, 3), nn.Linear(32, 1)

    def forward(self, x, use_aux):
        h = self.body(x)
        return self.main_head(h), (self.aux_head(h) if use_aux else None)


model = DDP(Net(), find_unused_parameters=True)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
g = torch.Generator().manual_seed(rank)
for step in range(4):
    x, y = torch.randn(16, 10, generator=g), torch.randint(0, 3, (16,), generator=g)
    logits, aux = model(x, use_aux=step % 2 == 0)
    loss = F.cross_entropy(logits, y)
    if aux is not None:
        loss = loss + 0.1 * F.mse_loss(aux.squeeze(1), x.sum(1))
    opt.zero_grad()
    loss.backward()
    opt.step()
del model
dist.barrier()
dist.destroy_process_group()

"""The forward of a two-stage network calls ``self.stage1`` twice (a copy-paste slip) and never uses
``self.stage2``. Under DDP this raised the "parameters that were not used in producing loss" error, which was
"fixed" by passing find_unused_parameters=True. The error is gone, stage2 silently never receives gradient
and never trains.

Source: https://github.com/tianzhi0549/FCOS/issues/217
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


class TwoStage(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(10, 32)
        self.stage1 = nn.Sequential(nn.Linear(32, 32), nn.ReLU())
        self.stage2 = nn.Sequential(nn.Linear(32, 32), nn.ReLU())
        self.head = nn.Linear(32, 2)

    def forward(self, x):
        h = F.relu(self.inp(x))
        h = self.stage1(h)
        h = self.stage1(h)  # BUG-LINE
        return self.head(h)


model = DDP(TwoStage(), find_unused_parameters=True)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(7 + rank)
X, y = torch.randn(96, 10, generator=g), torch.randint(0, 2, (96,), generator=g)
for i in range(0, 96, 24):
    loss = F.cross_entropy(model(X[i : i + 24]), y[i : i + 24])
    opt.zero_grad()
    loss.backward()
    opt.step()
del model
dist.destroy_process_group()

"""Each rank divides its loss by the world size before backward, believing the gradients of the ranks are
summed. DistributedDataParallel already *averages* gradients across ranks, so the extra division makes every
update world_size times too small (a silently reduced learning rate). Nothing errors.

Source: https://discuss.pytorch.org/t/averaging-gradients-in-distributeddataparallel/74840
doctor-command: torchrun --standalone --nproc-per-node 2 {program}
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 3)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
g = torch.Generator().manual_seed(100 + rank)
X, y = torch.randn(128, 12, generator=g), torch.randint(0, 3, (128,), generator=g)
for i in range(0, 128, 32):
    loss = F.cross_entropy(model(X[i : i + 32]), y[i : i + 32])
    loss = loss / world  # BUG-LINE
    opt.zero_grad()
    loss.backward()
    opt.step()
del model
dist.destroy_process_group()

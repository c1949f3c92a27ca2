"""The EMA of the weights is maintained only on rank 0 (as advised for evaluation), but the script also uses the
"update model with EMA every k steps" option, which copies the EMA weights into the online model on rank 0
alone. From then on the DDP replicas hold different weights while gradients keep being averaged; no error.

Source: https://github.com/lucidrains/ema-pytorch/issues/9
doctor-command: torchrun --standalone --nproc-per-node 2 {program}
"""

import copy

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
model = DDP(net)
ema = copy.deepcopy(net)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
update_model_with_ema_every = 1
g = torch.Generator().manual_seed(10 + rank)
for step in range(1, 7):
    x = torch.randn(16, 8, generator=g)
    loss = F.mse_loss(model(x), x.sum(1, keepdim=True))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if rank == 0:  # BUG-LINE
        with torch.no_grad():
            for pe, p in zip(ema.parameters(), net.parameters(), strict=False):
                pe.lerp_(p, 0.1)
            if step % update_model_with_ema_every == 0:
                for pe, p in zip(ema.parameters(), net.parameters(), strict=False):
                    p.copy_(pe)
del model
dist.barrier()
dist.destroy_process_group()

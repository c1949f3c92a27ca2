"""A contrastive model gathers embeddings from all ranks with ``dist.all_gather`` (no autograd) and puts its own
embeddings back in its slot so the local part keeps its graph. Each rank's loss then only backpropagates through
its own slot, and DDP averages over ranks, so the gradient is 1/world_size of the true gradient of the global
loss; the loss must be multiplied by world_size to compensate, and it is not.

Source: https://github.com/JohnGiorgi/DeCLUTR/pull/212
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
model = DDP(nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 32)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
torch.manual_seed(rank + 1)
for _step in range(5):
    x = torch.randn(8, 16)
    z1 = F.normalize(model(x + 0.05 * torch.randn_like(x)), dim=-1)
    z2 = F.normalize(model(x + 0.05 * torch.randn_like(x)), dim=-1)
    g1, g2 = [torch.zeros_like(z1) for _ in range(world)], [torch.zeros_like(z2) for _ in range(world)]
    dist.all_gather(g1, z1.detach())
    dist.all_gather(g2, z2.detach())
    g1[rank], g2[rank] = z1, z2
    a, b = torch.cat(g1), torch.cat(g2)
    logits = a @ b.t() / 0.1
    loss = F.cross_entropy(logits, torch.arange(a.size(0)))  # BUG-LINE
    opt.zero_grad()
    loss.backward()
    opt.step()
del model
dist.barrier()
dist.destroy_process_group()

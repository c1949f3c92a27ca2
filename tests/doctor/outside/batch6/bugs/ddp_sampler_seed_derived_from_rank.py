"""Each DDP rank builds its DistributedSampler with a seed derived from its own rank. DistributedSampler needs
the same seed on every replica so that the rank slices partition one shared permutation; with per-rank seeds
the ranks draw overlapping samples and skip others every epoch. Gradients still sync and nothing fails.

Source: https://github.com/NVlabs/LongLive/issues/71
doctor-command: torchrun --standalone --nproc-per-node 2 {program}
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
X, y = torch.randn(256, 10), torch.randint(0, 3, (256,))
dataset = TensorDataset(X, y)
sampler = DistributedSampler(dataset, shuffle=True, seed=1234 * rank)  # BUG-LINE
loader = DataLoader(dataset, batch_size=16, sampler=sampler)
model = DDP(nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sampler.set_epoch(0)
for step, (xb, yb) in enumerate(loader):
    loss = F.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step == 5:
        break
del model
dist.barrier()
dist.destroy_process_group()

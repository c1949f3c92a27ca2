"""DDP on gloo: each rank seeds its generator with its rank (for data augmentation), wraps the model in
DistributedDataParallel, and only then re-initialises the embedding table (``reset_parameters``): DDP broadcast
rank 0's weights at construction, so the reset gives every rank a different table, and DDP never broadcasts
again. The replicas train from different weights with averaged gradients; nothing fails.

Source: https://github.com/meta-pytorch/torchrec/pull/1866
doctor-command: torchrun --standalone --nproc-per-node 2 {program}
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(rank)


class Recommender(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Embedding(100, 16)
        self.mlp = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, ids):
        return self.mlp(self.table(ids).mean(1))


g = torch.Generator().manual_seed(0)
data = TensorDataset(torch.randint(0, 100, (256, 5), generator=g), torch.randn(256, 1, generator=g))
sampler = DistributedSampler(data, shuffle=True)
loader = DataLoader(data, batch_size=16, sampler=sampler)
model = nn.parallel.DistributedDataParallel(Recommender())
model.module.table.reset_parameters()  # BUG-LINE
opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for ids, y in loader:
        loss = F.mse_loss(model(ids), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
dist.destroy_process_group()

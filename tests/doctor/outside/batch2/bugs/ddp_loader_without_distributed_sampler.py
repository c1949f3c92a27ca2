"""DDP on gloo with a plain shuffling DataLoader instead of a DistributedSampler: every rank seeds the same
generator and draws the same batches, so the two replicas train on identical data and DDP is single-process
training at twice the cost.

Source: https://github.com/binbinao/physicsnemo-from-zero-to-one/issues/143
doctor-command: torchrun --standalone --nproc-per-node 2 {program}
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

dist.init_process_group("gloo")
torch.manual_seed(0)
data = TensorDataset(torch.randn(512, 16), torch.randint(0, 5, (512,)))
loader = DataLoader(data, batch_size=32, shuffle=True)  # BUG-LINE
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 5)))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for xb, yb in loader:
    loss = F.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
dist.destroy_process_group()

"""Class-balanced sampling with ``WeightedRandomSampler``: the weights passed are one per *sample* (the inverse
frequency of that sample's class), ``num_samples`` is the dataset length and sampling is with replacement, so
rare classes appear as often as common ones. The loader has no shuffle because the sampler replaces it.

Source: https://pytorch.org/docs/stable/data.html#torch.utils.data.WeightedRandomSampler
"""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler

torch.manual_seed(0)
y = torch.cat([torch.zeros(180), torch.ones(15), torch.full((5,), 2)]).long()
x = torch.randn(200, 8) + y.unsqueeze(1).float()
counts = torch.bincount(y).float()
sample_weights = (1.0 / counts)[y]
sampler = WeightedRandomSampler(sample_weights, num_samples=len(y), replacement=True)
loader = DataLoader(TensorDataset(x, y), batch_size=32, sampler=sampler)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for xb, yb in loader:
    loss = F.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()

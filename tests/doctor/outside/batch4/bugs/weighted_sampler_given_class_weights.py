"""To balance an imbalanced dataset, WeightedRandomSampler is given one weight per *class* (length 3) instead
of one weight per *sample*. The sampler then draws indices only from {0, 1, 2}: every batch consists of the
first three samples repeated, the rest of the dataset is never seen, and training runs without warning.

Source: https://codetd.com/article/12726075
"""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler

torch.manual_seed(0)
X = torch.randn(300, 12)
y = torch.cat([torch.zeros(240), torch.ones(45), torch.full((15,), 2.0)]).long()
class_counts = torch.bincount(y).double()
class_weights = 1.0 / class_counts
sampler = WeightedRandomSampler(class_weights, num_samples=len(y), replacement=True)  # BUG-LINE
loader = DataLoader(TensorDataset(X, y), batch_size=32, sampler=sampler)

model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 3))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step, (xb, yb) in enumerate(loader):
    loss = F.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step == 5:
        break

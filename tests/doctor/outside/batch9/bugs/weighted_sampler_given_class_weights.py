"""WeightedRandomSampler receives one weight per class instead of one weight per sample.

The sampler treats its weights as per-sample probabilities over indices 0..len(weights)-1, so
with two class weights it only ever draws dataset items 0 and 1. Every batch is made of the
same two samples from the first step on.
Source: https://github.com/deep-voice/soundbay/pull/49
"""

import torch
from torch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler

torch.manual_seed(0)
x = torch.randn(200, 8)
y = (torch.rand(200) < 0.1).long()
counts = torch.bincount(y, minlength=2).float()
class_weights = 1.0 / counts
sampler = WeightedRandomSampler(class_weights, num_samples=len(y), replacement=True)  # BUG-LINE
loader = DataLoader(TensorDataset(x, y), batch_size=20, sampler=sampler)

model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step, (xb, yb) in enumerate(loader):
    loss = torch.nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step == 7:
        break
print(f"loss {loss.item():.4f}")

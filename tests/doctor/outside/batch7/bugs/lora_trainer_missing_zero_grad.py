"""The LoRA training loop calls loss.backward() and optimizer.step() but never
zeroes the gradients. Each step's gradient is added to all previous ones, so the
k-th update uses the sum of k gradients: the effective learning rate grows every
step and updates keep pushing in stale directions.

Source: https://github.com/tenstorrent/tt-blacksmith/pull/711
"""

import torch
from torch import nn


class LoRALinear(nn.Module):
    def __init__(self, base, r=4):
        super().__init__()
        self.base = base
        self.base.requires_grad_(False)
        self.a = nn.Parameter(torch.randn(r, base.in_features) * 0.01)
        self.b = nn.Parameter(torch.zeros(base.out_features, r))

    def forward(self, x):
        return self.base(x) + x @ self.a.t() @ self.b.t()


torch.manual_seed(0)
layer = LoRALinear(nn.Linear(16, 16))
model = nn.Sequential(layer, nn.ReLU(), nn.Linear(16, 2).requires_grad_(False))
opt = torch.optim.SGD([layer.a, layer.b], lr=0.05)
x = torch.randn(64, 16)
y = (x[:, 0] > 0).long()
for _step in range(6):
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()  # BUG-LINE
    opt.step()
print("loss", loss.item())

"""A low-bit model quantises its hidden activations with a plain ``torch.round`` in forward. Rounding has zero
derivative almost everywhere, so no gradient passes through the quantiser: every layer before it gets an
all-zero gradient and never trains, while the loss still goes down a little through the layers after it. A
straight-through estimator is needed; nothing warns.

Source: https://discuss.pytorch.org/t/simple-custom-qat-backward-function/138095
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class QuantMLP(nn.Module):
    def __init__(self, bits=3):
        super().__init__()
        self.levels = 2**bits - 1
        self.fc1 = nn.Linear(12, 32)
        self.fc2 = nn.Linear(32, 3)

    def forward(self, x):
        h = torch.sigmoid(self.fc1(x))
        h = torch.round(h * self.levels) / self.levels  # BUG-LINE
        return self.fc2(h)


model = QuantMLP()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, y = torch.randn(160, 12), torch.randint(0, 3, (160,))
for i in range(0, 160, 32):
    loss = F.cross_entropy(model(X[i : i + 32]), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()

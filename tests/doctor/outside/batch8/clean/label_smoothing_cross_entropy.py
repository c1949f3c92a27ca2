"""Classifier trained with CrossEntropyLoss(label_smoothing=0.1).

The targets are softened (0.9 on the true class, 0.1 spread over all classes),
so the loss is bounded away from zero even for a perfect model; a loss floor
is expected and is not a sign of a bug.
Source: https://github.com/pytorch/pytorch/issues/7455
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 5))
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(128, 20)
y = x[:, :5].argmax(1)

for _step in range(10):
    opt.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    opt.step()
print(f"smoothed loss {loss.item():.4f}")

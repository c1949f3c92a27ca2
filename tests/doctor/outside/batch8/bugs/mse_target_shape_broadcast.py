"""Regression with predictions of shape [N, 1] and targets of shape [N].

MSELoss broadcasts the two to an [N, N] matrix and averages every prediction
against every target, so the model is pushed towards the global mean of y
instead of fitting each example.  Only a UserWarning is emitted; training
runs and the loss plateaus.
Source: https://github.com/pytorch/pytorch/issues/16045
"""

import warnings

import torch
import torch.nn as nn

warnings.simplefilter("ignore", UserWarning)
torch.manual_seed(0)
x = torch.randn(100, 2)
y = 10 + 9 * x[:, 0] - 2 * x[:, 1] + 0.1 * torch.randn(100)
model = nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = nn.MSELoss()

for _step in range(10):
    opt.zero_grad()
    loss = loss_fn(model(x), y)  # BUG-LINE
    loss.backward()
    opt.step()
print(f"loss {loss.item():.3f} w0 {model.weight[0, 0].item():.3f} (true 9.0)")

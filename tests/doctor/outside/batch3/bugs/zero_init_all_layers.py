"""Every layer of an MLP is initialised to zero (weights and biases) through ``model.apply``: the hidden ReLU units
all output 0, so the output layer's weights get a zero gradient, and the first layer's weights get a zero gradient
because the output weights are zero. Only the output bias learns; the loss creeps down and nothing fails.

Source: https://stats.stackexchange.com/questions/294332/backpropagation-with-zero-weight-initialization
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


def init_zero(m):
    if isinstance(m, nn.Linear):
        nn.init.zeros_(m.weight)
        nn.init.zeros_(m.bias)


model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
model.apply(init_zero)  # BUG-LINE
opt = torch.optim.SGD(model.parameters(), lr=0.05)
X = torch.randn(256, 8)
y = X @ torch.randn(8, 1) + 0.1 * torch.randn(256, 1)
for _epoch in range(3):
    for i in range(0, 256, 32):
        loss = F.mse_loss(model(X[i : i + 32]), y[i : i + 32])
        opt.zero_grad()
        loss.backward()
        opt.step()

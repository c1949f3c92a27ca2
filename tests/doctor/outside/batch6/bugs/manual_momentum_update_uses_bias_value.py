"""A hand-written SGD-with-momentum step feeds the bias *values* instead of the bias *gradients* into the
velocity of the bias terms (``v_b = mu * v_b - lr * b`` rather than ``- lr * b.grad``). The biases are pulled
towards zero like a strong weight decay and never fit the data; training runs and the weights still learn.

Source: https://github.com/apache/systemds/pull/2330
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 6))
velocity = {n: torch.zeros_like(p) for n, p in model.named_parameters()}
lr, mu = 0.05, 0.9
X = torch.randn(256, 6)
for i in range(0, 256, 32):
    x = X[i : i + 32]
    loss = F.mse_loss(model(x), x + 3.0)
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith("bias"):
                velocity[n] = mu * velocity[n] - lr * p  # BUG-LINE
            else:
                velocity[n] = mu * velocity[n] - lr * p.grad
            p += velocity[n]

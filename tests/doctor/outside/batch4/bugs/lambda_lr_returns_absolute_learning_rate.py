"""The inverse-decay schedule is written as ``LambdaLR(opt, lambda x: lr * (1 + g*x) ** -p)``, but LambdaLR
multiplies the optimizer's base lr by whatever the lambda returns. The base lr is applied twice, so the
effective learning rate is lr**2 (1e-4 instead of 1e-2) from the very first step, and the model barely moves.

Source: https://github.com/lhoyer/MIC/issues/60
"""

import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.lr_scheduler import LambdaLR

torch.manual_seed(0)
lr, lr_gamma, lr_decay = 0.01, 0.001, 0.75
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
scheduler = LambdaLR(opt, lambda x: lr * (1.0 + lr_gamma * float(x)) ** (-lr_decay))  # BUG-LINE
X, y = torch.randn(192, 20), torch.randint(0, 4, (192,))
for i in range(0, 192, 32):
    loss = F.cross_entropy(model(X[i : i + 32]), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()
    scheduler.step()

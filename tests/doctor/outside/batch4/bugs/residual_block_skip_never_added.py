"""A conditional residual block saves ``x_orig = x`` at the top of forward but returns the branch output
without adding it back (the line was lost in a refactor). The deep stack of blocks is then a plain deep
network: the identity path is gone, gradients to the early blocks shrink, and the model trains much worse,
with no error.

Source: https://github.com/yilundu/improved_contrastive_divergence/issues/7
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class CondResBlock(nn.Module):
    def __init__(self, d=32, n_cond=4):
        super().__init__()
        self.fc1 = nn.Linear(d, d)
        self.fc2 = nn.Linear(d, d)
        self.gain = nn.Embedding(n_cond, d)

    def forward(self, x, c):
        h = torch.tanh(self.fc1(x)) * self.gain(c)
        h = self.fc2(torch.tanh(h))
        return h  # BUG-LINE


class Net(nn.Module):
    def __init__(self, depth=10):
        super().__init__()
        self.inp = nn.Linear(12, 32)
        self.blocks = nn.ModuleList([CondResBlock() for _ in range(depth)])
        self.out = nn.Linear(32, 1)

    def forward(self, x, c):
        h = self.inp(x)
        for b in self.blocks:
            h = b(h, c)
        return self.out(h)


model = Net()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X, C = torch.randn(128, 12), torch.randint(0, 4, (128,))
Y = X[:, :1] - X[:, 1:2]
for i in range(0, 128, 32):
    loss = F.mse_loss(model(X[i : i + 32], C[i : i + 32]), Y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()

"""Gradient clipping called before ``loss.backward()`` in a two-task loop: it clips the gradients that
``zero_grad`` just set to None (nothing to clip), then backward writes the full, unclipped gradients and the
step applies them. The clip never acts; the run trains without the guard it was written with.

Source: https://github.com/Cranial-XIX/FAMO/issues/4
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class TwoTask(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(10, 64), nn.ReLU())
        self.reg = nn.Linear(64, 1)
        self.cls = nn.Linear(64, 3)

    def forward(self, x):
        h = self.trunk(x)
        return self.reg(h), self.cls(h)


model = TwoTask()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X = torch.randn(256, 10)
y_reg = 30 * torch.sin(2 * X[:, :1]) + torch.randn(256, 1)  # large targets: large gradients
y_cls = torch.randint(0, 3, (256,))
for i in range(0, 256, 32):
    out_reg, out_cls = model(X[i : i + 32])
    loss = F.mse_loss(out_reg, y_reg[i : i + 32]) + F.cross_entropy(out_cls, y_cls[i : i + 32])
    opt.zero_grad()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # BUG-LINE
    loss.backward()
    opt.step()

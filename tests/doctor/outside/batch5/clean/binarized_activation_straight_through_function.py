"""A binary-activation network uses a custom ``autograd.Function`` whose forward is ``sign(x)`` (zero gradient
almost everywhere) and whose backward passes the gradient straight through, clipped to |x| <= 1. The hand-written
backward is what lets the layers before the binarisation train.

Source: https://arxiv.org/abs/1308.3432
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class SignSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sign(x)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * (x.abs() <= 1).to(grad_out.dtype)


class BinNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.bn, self.fc2 = nn.Linear(16, 64), nn.BatchNorm1d(64), nn.Linear(64, 4)

    def forward(self, x):
        return self.fc2(SignSTE.apply(self.bn(self.fc1(x))))


model = BinNet()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X, y = torch.randn(128, 16), torch.randint(0, 4, (128,))
for i in range(0, 128, 32):
    loss = F.cross_entropy(model(X[i : i + 32]), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()

"""Each residual block is run under ``torch.utils.checkpoint.checkpoint(..., use_reentrant=False)``: the block's
activations are discarded in the forward pass and recomputed during backward. Gradients are identical to the
plain model (the non-reentrant variant also works when the block input does not require grad), only memory
use changes.

Source: https://pytorch.org/docs/stable/checkpoint.html
"""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ff = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        return x + self.ff(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(Block(32) for _ in range(4))
        self.inp, self.out = nn.Linear(12, 32), nn.Linear(32, 1)

    def forward(self, x):
        h = self.inp(x)
        for blk in self.blocks:
            h = checkpoint(blk, h, use_reentrant=False)
        return self.out(h)


model = Net()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
X = torch.randn(256, 12)
y = X[:, :2].prod(1, keepdim=True)
for i in range(0, 256, 32):
    loss = F.mse_loss(model(X[i : i + 32]), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()

"""Several prediction heads are meant to have their own residual block, but the block list is built by
repeating one module object (``[ResBlock(d)] * n``), so nn.ModuleList registers the same block n times: all
heads share a single set of weights and every head's gradient lands on it. Nothing errors; the heads cannot
specialise.

Source: https://github.com/linkedin/Liger-Kernel/pull/269
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class ResBlock(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, x):
        return x + F.silu(self.lin(x))


class MultiHead(nn.Module):
    def __init__(self, d=32, vocab=50, n_heads=3):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(16, d), nn.GELU())
        self.blocks = nn.ModuleList([ResBlock(d)] * n_heads)  # BUG-LINE
        self.outs = nn.ModuleList([nn.Linear(d, vocab) for _ in range(n_heads)])

    def forward(self, x):
        h = self.trunk(x)
        return [out(block(h)) for block, out in zip(self.blocks, self.outs, strict=False)]


model = MultiHead()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
X = torch.randn(128, 16)
Y = torch.randint(0, 50, (128, 3))
for i in range(0, 128, 32):
    logits = model(X[i : i + 32])
    loss = sum(F.cross_entropy(lg, Y[i : i + 32, k]) for k, lg in enumerate(logits))
    opt.zero_grad()
    loss.backward()
    opt.step()

"""Attention weights normalised with softmax over the wrong dimension.

The scores have shape (batch, query, key) but softmax is taken over dim=0,
the batch dimension.  Each example's attention is normalised against the
other examples in the batch rather than over its own keys; with batch size
1 every weight becomes exactly 1.  No error is raised.
Source: https://github.com/PetrochukM/PyTorch-NLP/issues/2
"""

import torch
import torch.nn as nn

torch.manual_seed(0)


class DotAttentionPool(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.q = nn.Parameter(torch.randn(1, 1, d))
        self.out = nn.Linear(d, 1)

    def forward(self, ctx):  # ctx: (batch, keys, d)
        scores = self.q.expand(ctx.size(0), -1, -1) @ ctx.transpose(1, 2)
        weights = torch.softmax(scores, dim=0)  # BUG-LINE
        return self.out((weights @ ctx).squeeze(1))


model = DotAttentionPool()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
ctx = torch.randn(8, 5, 16)
y = ctx[:, 2, :1]
for _step in range(8):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(ctx), y)
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")

"""Learnable memory tensors are stored as plain tensors instead of nn.Parameter.

The key/value memory bank is created with torch.randn in __init__, so it is not
registered as a parameter: model.parameters() does not return it, the optimizer
never sees it and it stays at its random initial value for the whole run.
Source: https://github.com/SimonThomine/RememberingNormality/issues/7
"""

import torch
import torch.nn as nn

torch.manual_seed(0)


class MemoryBlock(nn.Module):
    def __init__(self, slots=8, dim=16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.keys = torch.randn(slots, dim)  # BUG-LINE
        self.values = torch.randn(slots, dim)

    def forward(self, x):
        q = self.proj(x)
        attn = torch.softmax(q @ self.keys.t(), dim=-1)
        return attn @ self.values


model = MemoryBlock()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x, target = torch.randn(32, 16), torch.randn(32, 16)
for _step in range(6):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), target)
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f} n_params={sum(p.numel() for p in model.parameters())}")

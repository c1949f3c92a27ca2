"""Model cast to bfloat16 and trained with AdamW without fp32 master weights.

bfloat16 has only 8 bits of mantissa, so an update of lr * step (~1e-4 here)
on a weight of magnitude ~0.5 rounds back to the same value.  Most parameters
never change even though the optimizer steps and the loss is finite.
Source: https://github.com/tianweiy/CausVid/issues/19
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 1))
model = model.to(torch.bfloat16)  # BUG-LINE
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
before = [p.detach().clone() for p in model.parameters()]
x = torch.randn(64, 16, dtype=torch.bfloat16)
y = x[:, :2].sum(1, keepdim=True)

for _step in range(8):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x).float(), y.float())
    loss.backward()
    opt.step()
changed = sum((b != p).sum().item() for b, p in zip(before, model.parameters(), strict=False))
total = sum(p.numel() for p in model.parameters())
print(f"loss {loss.item():.4f} changed {changed}/{total}")

"""Model weights are cast to bfloat16 and trained with plain AdamW, with no fp32 master copy.

bf16 has a 7-bit mantissa: an Adam update of ~lr=1e-4 on weights of magnitude ~0.5 is smaller
than half a bf16 ulp, so the rounded weight equals the old one. Most parameters never change,
already at the first optimizer step.
Source: https://github.com/NVIDIA-NeMo/Automodel/pull/2248
"""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 8))
with torch.no_grad():
    for p in model.parameters():
        p.add_(0.5 * torch.sign(p))
model = model.to(torch.bfloat16)  # BUG-LINE
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0)

for _step in range(6):
    x = torch.randn(16, 32, dtype=torch.bfloat16)
    y = torch.randint(0, 8, (16,))
    loss = torch.nn.functional.cross_entropy(model(x).float(), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")

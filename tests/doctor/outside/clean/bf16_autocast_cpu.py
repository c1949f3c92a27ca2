"""A CPU bf16 autocast loop: bf16 has fp32's exponent range, no GradScaler is needed.

Source: https://github.com/engichang1467/Open-Rig3R/issues/35
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
X, y = torch.randn(32, 16), torch.randint(0, 4, (32,))
for _step in range(3):
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(X)
    loss = F.cross_entropy(logits.float(), y)
    loss.backward()
    opt.step()

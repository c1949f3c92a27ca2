"""Mixed precision on CPU with ``torch.autocast(device_type="cpu", dtype=torch.bfloat16)``: the forward runs in
bfloat16, the weights stay float32 and the backward and optimizer step happen outside the autocast region. No
GradScaler is needed for bfloat16, and its absence is correct.

Source: https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for _step in range(5):
    x, y = torch.randn(64, 32), torch.randint(0, 10, (64,))
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        logits = model(x)
        loss = F.cross_entropy(logits.float(), y)
    opt.zero_grad()
    loss.backward()
    opt.step()

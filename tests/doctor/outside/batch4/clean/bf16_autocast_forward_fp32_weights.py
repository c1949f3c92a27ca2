"""CPU mixed precision: the forward pass runs under torch.autocast('cpu', dtype=torch.bfloat16) while the weights,
gradients and optimizer state stay in float32. bfloat16 has float32's exponent range, so no GradScaler is
needed; the loss is computed in float32 from the bf16 logits.

Source: https://pytorch.org/docs/stable/amp.html
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 8))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
X, y = torch.randn(192, 32), torch.randint(0, 8, (192,))
for i in range(0, 192, 32):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(X[i : i + 32])
    loss = F.cross_entropy(logits.float(), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()

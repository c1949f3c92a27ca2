"""Mixed precision on CPU with torch.autocast(device_type="cpu", dtype=torch.bfloat16).
Only the forward pass and loss run inside the autocast region; backward and the
optimizer step run outside it on float32 master weights. bfloat16 has the same
exponent range as float32, so no GradScaler is needed, which is why none is used.

Source: https://pytorch.org/docs/stable/generated/torch.autocast.html
"""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 4))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(128, 16)
y = x[:, :4].argmax(1)
for _step in range(6):
    opt.zero_grad()
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        logits = model(x)
        loss = nn.functional.cross_entropy(logits, y)
    loss.backward()
    opt.step()
print("loss", loss.item(), logits.dtype)

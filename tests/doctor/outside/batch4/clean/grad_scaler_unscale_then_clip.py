"""Loss scaling with gradient clipping done in the documented order: scale(loss).backward(), then
scaler.unscale_(optimizer) so the gradients are back in true units, clip_grad_norm_ on the unscaled gradients,
then scaler.step and scaler.update. Scaled gradients right after backward are expected.

Source: https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scaler = torch.amp.GradScaler("cpu")
X, y = torch.randn(160, 16), torch.randint(0, 4, (160,))
for i in range(0, 160, 32):
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.float16):
        logits = model(X[i : i + 32])
    loss = F.cross_entropy(logits.float(), y[i : i + 32])
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()

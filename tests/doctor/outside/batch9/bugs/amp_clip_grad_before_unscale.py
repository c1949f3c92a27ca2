"""With GradScaler, gradients are clipped while still multiplied by the loss scale.

clip_grad_norm_ is called on the scaled gradients (scale 2**16) without scaler.unscale_ first,
so max_norm=1.0 is compared with a norm ~65536 times too large: the gradients are shrunk by
that factor and, after the optimizer unscales them, the update is essentially zero.
Source: https://github.com/victorchall/EveryDream2trainer/pull/175
"""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)

for _step in range(8):
    x = torch.randn(32, 16)
    y = x[:, :1] * 2
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = torch.nn.functional.mse_loss(model(x).float(), y)
    opt.zero_grad()
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)  # BUG-LINE
    scaler.step(opt)
    scaler.update()
print(f"loss {loss.item():.4f}")

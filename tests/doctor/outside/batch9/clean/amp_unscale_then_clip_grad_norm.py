"""Mixed-precision training with GradScaler: unscale_ first, then clip, then scaler.step.

Unusual: gradients are explicitly unscaled in place before clip_grad_norm_, so the clipping
threshold applies to true gradient magnitudes; scaler.step then skips its own unscaling.
Source: https://github.com/pytorch/examples/issues/1196
"""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
for _step in range(8):
    x = torch.randn(32, 16)
    y = x[:, :1] * 2
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = torch.nn.functional.mse_loss(model(x).float(), y)
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(opt)
    scaler.update()
print(f"loss {loss.item():.4f}")

"""MLP regression with a linear-warmup + cosine LambdaLR schedule that starts at exactly lr = 0.

Unusual but correct: the warmup factor is step / warmup_steps, so the very
first optimizer step runs with learning rate 0 (the parameters do not move on
step 0, only Adam's moment estimates are filled). This is the standard
warmup convention discussed in the source; the schedule is stepped once per
optimizer step, reaches the peak at step 30 and decays with a cosine to the
end of training, and the model trains normally.

Source: https://github.com/EleutherAI/gpt-neox/issues/1373
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

WARMUP, TOTAL = 30, 300


def lr_factor(step):
    if step < WARMUP:
        return step / WARMUP
    progress = (step - WARMUP) / (TOTAL - WARMUP)
    return 0.5 * (1 + math.cos(math.pi * progress))


x = torch.rand(4096, 8) * 2 - 1
y = (x[:, :4].pow(2).sum(1) - x[:, 4] * x[:, 5] + torch.sin(3 * x[:, 6])).unsqueeze(1)

model = nn.Sequential(nn.Linear(8, 128), nn.GELU(), nn.Linear(128, 128), nn.GELU(), nn.Linear(128, 1))
opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
print(f"lr before first step: {opt.param_groups[0]['lr']:.2e}")

for step in range(TOTAL):
    idx = torch.randint(0, x.shape[0], (128,))
    loss = F.mse_loss(model(x[idx]), y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    if step % 50 == 0 or step == TOTAL - 1:
        print(f"step {step:3d} loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.2e}")

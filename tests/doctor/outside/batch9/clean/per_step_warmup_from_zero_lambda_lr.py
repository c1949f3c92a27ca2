"""Linear warm-up scheduler stepped every optimizer step, starting from a learning rate of 0.

Unusual: the schedule is expressed in steps (not epochs) and lambda(0) = 0, so the very first
optimizer step does not move the weights at all; the lr then ramps linearly over 5 steps.
Source: https://github.com/crowsonkb/k-diffusion/issues/50
"""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
warmup = 5
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, s / warmup))
for _step in range(8):
    x = torch.randn(32, 8)
    loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
print(f"loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.2e}")

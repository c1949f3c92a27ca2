"""EMA helper overwrites self.decay with the warm-up value, so the decay collapses after a few steps.

The step-dependent decay min(decay, (1+n)/(10+n)) is stored back into self.decay (and then
1 - decay is used as the next cap), so from the second update on the EMA uses a decay
that oscillates far from the configured 0.999; the EMA weights track the raw weights almost
exactly instead of averaging.
Source: https://github.com/huggingface/diffusers/issues/1864
"""

import copy

import torch


class EMA:
    def __init__(self, model, decay=0.999):
        self.shadow = copy.deepcopy(model).requires_grad_(False)
        self.decay = decay
        self.n = 0

    @torch.no_grad()
    def step(self, model):
        value = (1 + self.n) / (10 + self.n)
        self.decay = 1 - min(self.decay, value)  # BUG-LINE
        self.n += 1
        for e, p in zip(self.shadow.parameters(), model.parameters(), strict=False):
            e.mul_(self.decay).add_(p, alpha=1 - self.decay)


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
ema = EMA(model)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for _step in range(8):
    x = torch.randn(32, 8)
    loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    ema.step(model)
print(f"loss {loss.item():.4f} ema decay {ema.decay:.4f}")

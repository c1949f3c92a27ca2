"""GRU next-step forecaster for a bursty synthetic sensor series with occasional large spikes, with the input
projection frozen (pretrained-style) and everything else trained with SGD plus gradient-norm clipping at 1.0.
The trainable parameters are collected with filter(lambda p: p.requires_grad, ...) and that same filter object
is given first to the optimizer and later to clip_grad_norm_. A filter object is a one-shot iterator: the
optimizer consumes it, so clip_grad_norm_ later receives an empty iterable, clips nothing and returns 0.
Because it is a filter (not a generator) PyTorch does not emit its empty-generator warning, and the spikes
produce huge unclipped updates.
Source: https://github.com/PixArt-alpha/PixArt-alpha/pull/160
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
t = torch.arange(4000).float()
series = torch.sin(2 * math.pi * t / 50) + 0.1 * torch.randn(4000)
spikes = torch.rand(4000) < 0.01
series[spikes] += 15.0 * torch.randn(int(spikes.sum()))


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(1, 16)
        self.gru = nn.GRU(16, 32, batch_first=True)
        self.out = nn.Linear(32, 1)

    def forward(self, x):
        h, _ = self.gru(torch.tanh(self.inp(x.unsqueeze(-1))))
        return self.out(h).squeeze(-1)


model = Forecaster()
for p in model.inp.parameters():
    p.requires_grad_(False)
trainable = filter(lambda p: p.requires_grad, model.parameters())  # BUG-LINE
opt = torch.optim.SGD(trainable, lr=0.3)
for step in range(120):
    i = torch.randint(0, 3900, (32,))
    w = torch.stack([series[j : j + 41] for j in i.tolist()])
    loss = F.mse_loss(model(w[:, :-1]), w[:, 1:])
    opt.zero_grad()
    loss.backward()
    total = torch.nn.utils.clip_grad_norm_(trainable, max_norm=1.0)
    opt.step()
    if step % 30 == 0:
        print(f"step {step} loss {loss.item():.4f} reported grad norm {float(total):.4f}")
with torch.no_grad():
    w = torch.stack([series[j : j + 41] for j in range(3000, 3900, 10)])
    print("held-out MSE:", round(F.mse_loss(model(w[:, :-1]), w[:, 1:]).item(), 4))

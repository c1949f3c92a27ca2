"""Sequence-to-sequence GRU forecaster for a noisy multi-seasonal time series: an encoder reads the last 24
observations and a teacher-forced decoder predicts the next 8. Teacher forcing should feed the decoder the
*previous* target value at each horizon step (last observation, y_0, ..., y_{H-2}). Here the decoder input is
the unshifted target window itself, so at every step the decoder receives the exact value it has to predict
and learns to copy it. Training loss collapses towards zero from the first epoch, which looks like great
progress; nothing raises or warns.
Source: https://github.com/sktime/pytorch-forecasting/issues/182
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
CTX, H = 24, 8
t = torch.arange(3000).float()
series = torch.sin(2 * math.pi * t / 24) + 0.5 * torch.sin(2 * math.pi * t / 7) + 0.2 * torch.randn(3000)


def windows(start, end, n):
    i = torch.randint(start, end - CTX - H, (n,))
    w = torch.stack([series[j : j + CTX + H] for j in i.tolist()])
    return w[:, :CTX], w[:, CTX:]


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.GRU(1, 32, batch_first=True)
        self.dec = nn.GRU(1, 32, batch_first=True)
        self.out = nn.Linear(32, 1)

    def forward(self, hist, dec_in):
        _, h = self.enc(hist.unsqueeze(-1))
        o, _ = self.dec(dec_in.unsqueeze(-1), h)
        return self.out(o).squeeze(-1)

    @torch.no_grad()
    def forecast(self, hist):
        _, h = self.enc(hist.unsqueeze(-1))
        prev, outs = hist[:, -1:], []
        for _ in range(H):
            o, h = self.dec(prev.unsqueeze(-1), h)
            prev = self.out(o).squeeze(-1)
            outs.append(prev)
        return torch.cat(outs, 1)


model = Seq2Seq()
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
for step in range(200):
    hist, target = windows(0, 2400, 64)
    dec_in = target  # BUG-LINE
    loss = F.mse_loss(model(hist, dec_in), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"step {step} teacher-forced loss {loss.item():.4f}")
hist, target = windows(2400, 3000, 256)
print("held-out autoregressive MSE:", round(F.mse_loss(model.forecast(hist), target).item(), 4))

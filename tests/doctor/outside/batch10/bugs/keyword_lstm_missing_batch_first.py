"""Keyword-spotting style classifier: each utterance is a (time, n_mfcc) feature matrix built from synthetic
spectro-temporal patterns, batched as (batch, time, features) and fed to an nn.LSTM whose output at the last
time step goes to a linear classifier. The LSTM is created without batch_first=True, so it treats the batch
axis as time and the time axis as batch; out[:, -1] then picks the state of the last *frame index* run over
the sequence of utterances in the batch, mixing different examples together. All shapes line up (B, T, F is
accepted as T, B, F) so PyTorch raises nothing and the loss still moves a little.
Source: https://github.com/pytorch/pytorch/issues/1538
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
N_MFCC, T, N_CLASSES = 13, 40, 4


def make_batch(n):
    y = torch.randint(0, N_CLASSES, (n,))
    t = torch.arange(T).float()
    x = torch.randn(n, T, N_MFCC) * 0.3
    for i in range(n):
        freq = 0.1 + 0.12 * int(y[i])
        band = int(y[i]) * 3
        x[i, :, band : band + 3] += torch.sin(2 * math.pi * freq * t).unsqueeze(1)
    return x, y


class KWS(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(N_MFCC, 48, num_layers=1)  # BUG-LINE
        self.out = nn.Linear(48, N_CLASSES)

    def forward(self, x):
        h, _ = self.rnn(x)
        return self.out(h[:, -1, :])


model = KWS()
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
for step in range(80):
    x, y = make_batch(32)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step} loss {loss.item():.4f}")
xv, yv = make_batch(256)
with torch.no_grad():
    print(
        "final loss",
        round(F.cross_entropy(model(xv), yv).item(), 4),
        "acc",
        (model(xv).argmax(1) == yv).float().mean().item(),
    )

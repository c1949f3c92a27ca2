"""Dilated TCN forecaster for next-step prediction of noisy sine series.

Bug: each residual block pads the input by (k-1)*d on both sides (as Conv1d's
`padding=` argument does) and then removes the extra outputs from the LEFT end
instead of the right end ("chomp"). Output position t therefore sees inputs
x[t .. t+(k-1)*d], i.e. the future, including x[t+1], which is exactly the
target. Training loss collapses towards zero (data leakage) but the model is
useless for real forecasting. The locuslab TCN authors explain that the
(k-1)*d padded outputs must be removed on the right (Chomp1d) to keep causality.

Source: https://github.com/locuslab/TCN/issues/8
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


class TemporalBlock(nn.Module):
    def __init__(self, cin, cout, k, d):
        super().__init__()
        self.trim = (k - 1) * d
        self.conv1 = nn.Conv1d(cin, cout, k, dilation=d, padding=self.trim)
        self.conv2 = nn.Conv1d(cout, cout, k, dilation=d, padding=self.trim)
        self.down = nn.Conv1d(cin, cout, 1) if cin != cout else nn.Identity()

    def chomp(self, y):
        return y[:, :, self.trim :]  # BUG-LINE

    def forward(self, x):
        h = F.relu(self.chomp(self.conv1(x)))
        h = F.relu(self.chomp(self.conv2(h)))
        return F.relu(h + self.down(x))


class TCN(nn.Module):
    def __init__(self, ch=16, k=3, levels=2):
        super().__init__()
        blocks, cin = [], 1
        for i in range(levels):
            blocks.append(TemporalBlock(cin, ch, k, 2**i))
            cin = ch
        self.net = nn.Sequential(*blocks)
        self.head = nn.Conv1d(ch, 1, 1)

    def forward(self, x):
        return self.head(self.net(x))


def make_batch(bs=16, L=32):
    t0 = torch.rand(bs, 1) * 100
    freq = 0.1 + 0.2 * torch.rand(bs, 1)
    t = t0 + torch.arange(L + 1).float()
    s = torch.sin(freq * t) + 0.3 * torch.randn(bs, L + 1)
    x = s[:, :-1].unsqueeze(1)
    y = s[:, 1:].unsqueeze(1)  # next value of the series
    return x, y


model = TCN()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for step in range(60):
    x, y = make_batch()
    pred = model(x)
    loss = F.mse_loss(pred, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 15 == 0 or step == 59:
        print(f"step {step:3d} mse {loss.item():.4f}")

with torch.no_grad():
    x, y = make_batch(64)
    print("eval mse", F.mse_loss(model(x), y).item(), "noise floor ~", 0.09)

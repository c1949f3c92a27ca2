"""LSTM one-step-ahead forecaster trained on shuffled windows of many short time series.

Each training window comes from a different random sinusoid (random amplitude, frequency and
phase) and the windows are drawn in random order. Bug: the model keeps its (h, c) state between
calls ("stateful" RNN) and feeds the detached final state of the previous, unrelated window in
as the initial state of the next one. Nothing errors; the state simply injects information from
a different series into every prediction (and the batch order is random, so it cannot be
exploited). The loss falls but stays noticeably above a model that starts every window from a
zero state. Fix: do not carry state between independent, shuffled windows (pass no initial
state / reset it per batch).

Source: https://github.com/tensorflow/tensorflow/issues/40067
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_SERIES, WIN, H, BATCH = 2048, 12, 32, 64

t = torch.arange(WIN + 1).float()
amp = torch.rand(N_SERIES, 1) * 2 + 0.5
freq = torch.rand(N_SERIES, 1) * 0.8 + 0.2
phase = torch.rand(N_SERIES, 1) * 2 * math.pi
series = amp * torch.sin(freq * t + phase) + 0.05 * torch.randn(N_SERIES, WIN + 1)
inputs, targets = series[:, :-1, None], series[:, 1:, None]


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(1, H, batch_first=True)
        self.out = nn.Linear(H, 1)
        self.state = None

    def forward(self, x):
        y, state = self.lstm(x, self.state)  # BUG-LINE
        self.state = tuple(s.detach() for s in state)
        return self.out(y)


model = Forecaster()
opt = torch.optim.Adam(model.parameters(), lr=5e-3)

for step in range(200):
    idx = torch.randint(0, N_SERIES, (BATCH,))
    pred = model(inputs[idx])
    loss = F.mse_loss(pred, targets[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 40 == 0:
        print(f"step {step:3d} mse {loss.item():.4f}")

with torch.no_grad():
    idx = torch.randint(0, N_SERIES, (BATCH,))
    print(f"held-out mse {F.mse_loss(model(inputs[idx]), targets[idx]).item():.4f}")

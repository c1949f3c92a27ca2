"""One-step-ahead forecaster: sliding windows of a noisy multi-frequency signal fed to an LSTM.

Bug: the windows are built as (batch, seq_len, features) but nn.LSTM is constructed without
batch_first=True, so it reads dim 0 (the batch) as time and dim 1 (the window) as the batch.
The recurrence runs across different samples of the minibatch, and out[:, -1] is the state of
window position T-1 only, carried over the other samples. No shape error (all sizes are
compatible), the loss moves a bit, but the model never sees the history of each window. This is
the batch_first mismatch described in the report (loss not decreasing in an RNN because the
layout given to the RNN does not match its batch_first setting).

Source: https://taourl.com/read-2624309.html
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

SEQ = 24


def make_series(n=3000):
    t = torch.arange(n, dtype=torch.float32)
    s = torch.sin(2 * math.pi * t / 37) + 0.5 * torch.sin(2 * math.pi * t / 11)
    return s + 0.05 * torch.randn(n)


def windows(series):
    xs, ys = [], []
    for i in range(len(series) - SEQ):
        xs.append(series[i : i + SEQ])
        ys.append(series[i + SEQ])
    x = torch.stack(xs).unsqueeze(-1)  # (N, SEQ, 1)
    y = torch.stack(ys).unsqueeze(-1)
    return x, y


class Forecaster(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.lstm = nn.LSTM(input_size=1, hidden_size=hidden, num_layers=1)  # BUG-LINE
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1, :])


def main():
    x, y = windows(make_series())
    n_train = int(0.8 * len(x))
    xtr, ytr, xva, yva = x[:n_train], y[:n_train], x[n_train:], y[n_train:]
    model = Forecaster()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    loss_fn = nn.MSELoss()
    for step in range(200):
        idx = torch.randint(0, n_train, (64,))
        pred = model(xtr[idx])
        loss = loss_fn(pred, ytr[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0 or step == 199:
            with torch.no_grad():
                val = loss_fn(model(xva[:256]), yva[:256]).item()
            print(f"step {step:3d} train_mse {loss.item():.4f} val_mse {val:.4f}")


if __name__ == "__main__":
    main()

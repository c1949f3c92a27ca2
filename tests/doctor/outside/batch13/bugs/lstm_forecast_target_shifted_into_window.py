"""One-step-ahead LSTM forecaster on a synthetic seasonal series with noise.

The label for the window ending at time t should be the value at t+1. The
target array is built by shifting the series in the wrong direction, so the
"label" of each window is the value at t-1, which is already the second-to-last
element of the input window. The model learns to copy an input and reports an
excellent training and validation MSE, but it has learned nothing about the
future: it does not forecast at all.

Source: https://github.com/KIC/pandas-ml-quant/issues/25
"""

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)
rng = np.random.RandomState(0)

n, W = 2400, 24
t = np.arange(n)
series = np.sin(2 * np.pi * t / 50) + 0.5 * np.sin(2 * np.pi * t / 13) + 0.3 * rng.randn(n)
series = ((series - series[:1800].mean()) / series[:1800].std()).astype(np.float32)

target = np.roll(series, 1)  # BUG-LINE
idx = np.arange(W, n - 1)
X = np.stack([series[i - W + 1 : i + 1] for i in idx])[:, :, None]
y = target[idx][:, None]
split = int(0.75 * len(idx))
X_tr, y_tr = torch.tensor(X[:split]), torch.tensor(y[:split])
X_va, y_va = torch.tensor(X[split:]), torch.tensor(y[split:])


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(1, 32, batch_first=True)
        self.head = nn.Linear(32, 1)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


model = Forecaster()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
loss_fn = nn.MSELoss()
for epoch in range(15):
    perm = torch.randperm(len(X_tr))
    for i in range(0, len(X_tr), 64):
        b = perm[i : i + 64]
        loss = loss_fn(model(X_tr[b]), y_tr[b])
        opt.zero_grad()
        loss.backward()
        opt.step()
    if epoch % 3 == 0 or epoch == 14:
        with torch.no_grad():
            val = loss_fn(model(X_va), y_va).item()
        print(f"epoch {epoch:2d}  train mse {loss.item():.4f}  val mse {val:.4f}")

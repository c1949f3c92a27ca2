"""One-step-ahead forecasting of a noisy multi-seasonal synthetic series with an LSTM over sliding windows of the previous W values. The window-building code slices W+1 values for the input, so the last input element is exactly the value the model is asked to predict: the target leaks into the features. The LSTM accepts any sequence length, so nothing breaks; the training loss simply collapses towards zero because the model learns to copy its last input, and the error is present from the first batch.
Source: https://github.com/mindsdb/lightwood/issues/1047
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
W, N = 24, 1500
t = torch.arange(N, dtype=torch.float32)
series = torch.sin(2 * math.pi * t / 24) + 0.5 * torch.sin(2 * math.pi * t / 7) + 0.3 * torch.randn(N)
series = (series - series.mean()) / series.std()

xs, ys = [], []
for i in range(N - W - 1):
    xs.append(series[i : i + W + 1])  # BUG-LINE
    ys.append(series[i + W])
X = torch.stack(xs).unsqueeze(-1)
Y = torch.stack(ys)


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(1, 32, batch_first=True)
        self.head = nn.Linear(32, 1)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1]).squeeze(-1)


model = Forecaster()
optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
for step in range(40):
    idx = torch.randint(0, X.size(0), (64,))
    loss = nn.functional.mse_loss(model(X[idx]), Y[idx])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 5 == 0:
        print(f"step {step} mse {loss.item():.4f}")

with torch.no_grad():
    print("train mse", round(nn.functional.mse_loss(model(X[:500]), Y[:500]).item(), 4))

"""Demand forecaster with per-sample (per-row) loss weights for recency and reliability.

Unusual but correct: the regression loss is computed with reduction='none', each
row's loss is multiplied by its own weight (recent observations and reliable
stores count more), and the total is divided by the SUM of the weights (a
weighted mean), so the loss scale does not change with the weights' overall
magnitude. Weights are data, not parameters (no gradient). The learning rate is
large (0.3) for plain SGD, which is right here because inputs and targets are
standardised and the model is small. Per-sample weighting of a loss as
(sum_i w_i * loss_i) / (sum_i w_i) is discussed in this forum thread.

Source: https://discuss.pytorch.org/t/how-to-use-the-weight-loss-functions-parameter/58206
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N, LAGS = 4000, 7
series = torch.cumsum(torch.randn(N + LAGS + 1) * 0.3, 0) + torch.sin(torch.arange(N + LAGS + 1) * 0.9)
X = torch.stack([series[i : i + N] for i in range(LAGS)], 1)
y = series[LAGS : LAGS + N]
mu, sd = X.mean(0), X.std(0)
Xn = (X - mu) / sd
age = torch.arange(N, 0, -1).float()  # 1 = most recent
reliable = (torch.rand(N) > 0.2).float()
y_obs = y + (1 - reliable) * torch.randn(N) * 3.0  # unreliable rows are noisy
ym, ys = y.mean(), y.std()
y_obs_n = (y_obs - ym) / ys
w = torch.exp(-age / 2000.0) * (0.2 + 0.8 * reliable)

model = nn.Sequential(nn.Linear(LAGS, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.3)
for step in range(150):
    idx = torch.randint(0, N, (256,))
    per_row = F.mse_loss(model(Xn[idx]).squeeze(1), y_obs_n[idx], reduction="none")
    loss = (w[idx] * per_row).sum() / w[idx].sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 30 == 0 or step == 149:
        print(f"step {step:3d} weighted mse {loss.item():.4f}")

with torch.no_grad():
    recent = slice(N - 500, N)
    err = (model(Xn[recent]).squeeze(1) * ys + ym - y[recent]).abs().mean()
    print("MAE on recent clean targets", err.item())

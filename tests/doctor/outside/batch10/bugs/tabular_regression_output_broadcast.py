"""MLP regression on a synthetic tabular data set (8 numeric features, nonlinear target plus noise). The model
ends in nn.Linear(..., 1) and returns shape (B, 1) while the targets are shape (B,); the squared error is
written by hand as ((pred - y) ** 2).mean(). Broadcasting turns pred - y into a (B, B) matrix of all pairs, so
the network is trained to predict the batch mean of the targets for every row. A hand-written loss has no
shape check (unlike nn.MSELoss, which would warn), so the run is completely silent.
Source: https://github.com/sktime/sktime/issues/10931
"""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)
n = 2048
X = torch.randn(n, 8)
y = 2.0 * X[:, 0] - X[:, 1] * X[:, 2] + torch.sin(3 * X[:, 3]) + 0.1 * torch.randn(n)
mu, sd = X[:1536].mean(0), X[:1536].std(0)
X = (X - mu) / sd
train = DataLoader(TensorDataset(X[:1536], y[:1536]), batch_size=64, shuffle=True)

model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for epoch in range(6):
    for xb, yb in train:
        pred = model(xb)  # BUG-LINE
        loss = ((pred - yb) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"epoch {epoch} train loss {loss.item():.4f}")
with torch.no_grad():
    val_pred = model(X[1536:]).view(-1)
    r2 = 1 - ((val_pred - y[1536:]) ** 2).mean() / y[1536:].var()
print("validation R^2:", round(r2.item(), 4))

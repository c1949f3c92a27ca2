"""Human-activity-recognition style time-series classifier: windows of 3-axis accelerometer-like signals
(each activity has its own dominant frequency and axis) classified by a 1-D CNN. Before training the arrays
are shuffled with NumPy, but the features and the labels are indexed with two *different* random
permutations, so after "shuffling" every window carries the label of some other window. Shapes and dtypes are
all correct and the loss is computed normally; the model just fits random labels (train accuracy near
chance) without any error or warning.
Source: https://github.com/udacity/sdc-issue-reports/issues/1326
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
rng = np.random.default_rng(0)
N, T, C = 1200, 64, 4
labels = rng.integers(0, C, N)
t = np.arange(T)
signals = rng.normal(0, 0.4, (N, 3, T)).astype(np.float32)
for i in range(N):
    k = labels[i]
    signals[i, k % 3] += np.sin(2 * np.pi * (k + 1) * t / 16).astype(np.float32)

perm_x = rng.permutation(N)
perm_y = rng.permutation(N)  # BUG-LINE
X = torch.from_numpy(signals[perm_x])
Y = torch.from_numpy(labels[perm_y]).long()
Xtr, Ytr, Xva, Yva = X[:1000], Y[:1000], X[1000:], Y[1000:]

model = nn.Sequential(
    nn.Conv1d(3, 16, 5, padding=2),
    nn.ReLU(),
    nn.MaxPool1d(2),
    nn.Conv1d(16, 32, 5, padding=2),
    nn.ReLU(),
    nn.AdaptiveAvgPool1d(1),
    nn.Flatten(),
    nn.Linear(32, C),
)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for epoch in range(5):
    for i in range(0, 1000, 50):
        loss = F.cross_entropy(model(Xtr[i : i + 50]), Ytr[i : i + 50])
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")
with torch.no_grad():
    print("val acc:", round((model(Xva).argmax(1) == Yva).float().mean().item(), 4))

"""A classification data set stored sorted by label and served by a DataLoader with ``shuffle=False``: every
batch holds one class, so each step pushes the model toward predicting that class; the loss swings from batch to
batch and the model ends up predicting the last class it saw. Nothing warns.

Source: https://dailydoseofds.beehiiv.com/p/why-is-it-important-to-shuffle-your
"""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
X = torch.randn(600, 10)
y = (X[:, 0] > 0.5).long() + (X[:, 1] > 0.5).long()  # 3 classes
order = torch.argsort(y, stable=True)  # the file is stored grouped by class
data = TensorDataset(X[order], y[order])
loader = DataLoader(data, batch_size=50, shuffle=False)  # BUG-LINE
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _epoch in range(2):
    for xb, yb in loader:
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()

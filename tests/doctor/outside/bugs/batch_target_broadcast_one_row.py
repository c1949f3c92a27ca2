"""The sequence target is taken with shape (1, 1) while predictions are (N, 1): every sample is fit to one value.

Source: https://github.com/andrewgcodes/xlstm/issues/4
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
series = torch.randn(11, 3)
for _step in range(3):
    opt.zero_grad()
    y_pred = model(series[:10])
    y_true = series[10:, :1]
    loss = F.mse_loss(y_pred, y_true)  # BUG-LINE
    loss.backward()
    opt.step()

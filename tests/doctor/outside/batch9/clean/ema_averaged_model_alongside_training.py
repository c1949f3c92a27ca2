"""Exponential moving average of the weights kept with torch.optim.swa_utils.AveragedModel.

Unusual: a second, non-trained copy of the model is updated after every optimizer step with
decay 0.99; its parameters change without ever receiving gradients.
Source: https://github.com/pytorch/pytorch/pull/155396
"""

import torch
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.99))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for _step in range(8):
    x = torch.randn(32, 8)
    loss = (model(x) - x[:, :1]).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    ema.update_parameters(model)
with torch.no_grad():
    ema_loss = (ema(x) - x[:, :1]).pow(2).mean()
print(f"loss {loss.item():.4f} ema loss {ema_loss.item():.4f}")

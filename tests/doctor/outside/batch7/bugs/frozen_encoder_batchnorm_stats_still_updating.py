"""The pretrained encoder is "frozen" for fine-tuning by setting requires_grad=False
on its parameters, but its BatchNorm layers stay in training mode. Every forward
pass still normalises with batch statistics and overwrites running_mean/var with
fine-tuning data, so the frozen features drift away from the pretrained encoder
and depend on the batch composition.

Source: https://github.com/chemprop/chemprop/pull/952
"""

import torch
from torch import nn

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU())
head = nn.Linear(32, 1)
encoder.requires_grad_(False)  # BUG-LINE
model = nn.Sequential(encoder, head)
model.train()
opt = torch.optim.SGD(head.parameters(), lr=0.05)
x = 3.0 + 2.0 * torch.randn(128, 8)
y = x.mean(1, keepdim=True)
for i in range(0, 128, 16):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x[i : i + 16]), y[i : i + 16])
    loss.backward()
    opt.step()
print("loss", loss.item())

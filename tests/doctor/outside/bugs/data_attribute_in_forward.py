"""The hidden activation is taken through .data: the encoder is cut from the loss.

Source: https://arxiv.org/abs/1910.11015
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(24, 6)
        self.dec = nn.Linear(6, 24)

    def forward(self, x):
        z = torch.relu(self.enc(x)).data  # BUG-LINE
        return self.dec(z)


model = AutoEncoder()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X = torch.randn(64, 24)
for _step in range(3):
    opt.zero_grad()
    loss = F.mse_loss(model(X), X)
    loss.backward()
    opt.step()

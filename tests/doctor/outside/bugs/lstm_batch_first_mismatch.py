"""Batches are (batch, time, features) but the LSTM expects (time, batch, features): it runs across samples.

Source: https://karpathy.github.io/2019/04/25/recipe/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(6, 16)  # BUG-LINE
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


model = Seq()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X, y = torch.randn(8, 20, 6), torch.randint(0, 3, (8,))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()

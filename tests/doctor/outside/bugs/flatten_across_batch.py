"""A transpose before reshape(-1, features) puts values of different samples in one row.

Source: https://karpathy.github.io/2019/04/25/recipe/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(3, 5)
        self.fc = nn.Linear(20, 1)

    def forward(self, x):  # x: (B, 4, 3)
        h = self.emb(x)  # (B, 4, 5)
        h = h.transpose(0, 1).reshape(x.shape[0], -1)  # BUG-LINE
        return self.fc(h)


model = Net()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X = torch.randn(16, 4, 3)
y = X.sum((1, 2)).unsqueeze(1)
for _step in range(3):
    opt.zero_grad()
    loss = F.mse_loss(model(X), y)
    loss.backward()
    opt.step()

"""Conv features (B, C, L) are made (B, L, C) with view instead of permute: each position's vector mixes channels and
positions.

Source: https://karpathy.github.io/2019/04/25/recipe/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 8, 3, padding=1)
        self.fc = nn.Linear(8, 2)

    def forward(self, x):  # x: (B, 4, L)
        h = torch.relu(self.conv(x))  # (B, 8, L)
        h = h.view(h.shape[0], h.shape[2], h.shape[1])  # BUG-LINE
        return self.fc(h).mean(1)


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
X, y = torch.randn(12, 4, 9), torch.randint(0, 2, (12,))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()

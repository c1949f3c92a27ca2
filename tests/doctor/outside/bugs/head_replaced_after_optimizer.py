"""Transfer learning: the optimizer is built, then model.fc is swapped for a new head: the new head is never stepped.

Source: https://github.com/huggingface/transformers/pull/4450
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(10, 16), nn.ReLU())
        self.fc = nn.Linear(16, 100)

    def forward(self, x):
        return self.fc(self.body(x))


model = Backbone()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
model.fc = nn.Linear(16, 3)  # BUG-LINE
X, y = torch.randn(24, 10), torch.randint(0, 3, (24,))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()

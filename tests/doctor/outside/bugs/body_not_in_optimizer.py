"""Fine-tuning end to end was intended, but the optimizer got only the head: the body has gradients, never steps.

Source: https://arxiv.org/abs/1910.11015
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 24), nn.ReLU())
        self.head = nn.Linear(24, 3)

    def forward(self, x):
        return self.head(self.body(x))


model = Net()
opt = torch.optim.Adam(model.head.parameters(), lr=1e-3)  # BUG-LINE
X, y = torch.randn(32, 12), torch.randint(0, 3, (32,))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()

"""A temperature made with requires_grad=True but not nn.Parameter: it gets a gradient, no optimizer holds it.

Source: https://arxiv.org/abs/1910.11015
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 3)
        self.log_temp = torch.zeros(1, requires_grad=True)  # BUG-LINE

    def forward(self, x):
        return self.fc(x) / self.log_temp.exp()


model = Classifier()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
X, y = torch.randn(48, 10), torch.randint(0, 3, (48,))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()

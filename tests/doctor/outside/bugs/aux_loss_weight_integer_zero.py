"""The auxiliary loss weight is 1 // 2 == 0: the auxiliary head gets an all-zero gradient and never learns.

Source: https://arxiv.org/abs/1910.11015
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(10, 16)
        self.main = nn.Linear(16, 3)
        self.aux = nn.Linear(16, 1)

    def forward(self, x):
        h = torch.relu(self.body(x))
        return self.main(h), self.aux(h)


model = Net()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
aux_weight = 1 // 2  # BUG-LINE
X, y, z = torch.randn(32, 10), torch.randint(0, 3, (32,)), torch.randn(32, 1)
for _step in range(3):
    opt.zero_grad()
    logits, aux = model(X)
    loss = F.cross_entropy(logits, y) + aux_weight * F.mse_loss(aux, z)
    loss.backward()
    opt.step()

"""The residual MLP blocks are stored in a plain Python list instead of an
nn.ModuleList, so they are not registered as submodules. model.parameters() does
not contain them: the optimizer never updates them, they are missing from the
state_dict and are not switched by train()/eval(). Only the small head learns
while the blocks keep their random initial weights.

Source: https://github.com/LianpoWang/SLIIF/issues/13
"""

import torch
from torch import nn


class ResMLPs(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(6, 16)
        self.blocks = [nn.Linear(16, 16) for _ in range(3)]  # BUG-LINE
        self.head = nn.Linear(16, 1)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        for blk in self.blocks:
            h = h + torch.relu(blk(h))
        return self.head(h)


torch.manual_seed(0)
model = ResMLPs()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(64, 6)
y = torch.sin(x).sum(1, keepdim=True)
for _step in range(6):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
print("loss", loss.item())

"""Two losses backpropagated one after the other through a shared trunk; the first keeps the graph on purpose.

Source: https://stackoverflow.com/questions/46774641/what-does-the-parameter-retain-graph-mean-in-the-variables-backward-method/47174709
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
trunk = nn.Linear(8, 16)
h1, h2 = nn.Linear(16, 2), nn.Linear(16, 1)
opt = torch.optim.SGD([*trunk.parameters(), *h1.parameters(), *h2.parameters()], lr=0.05)
X, y, z = torch.randn(32, 8), torch.randint(0, 2, (32,)), torch.randn(32, 1)
for _step in range(3):
    opt.zero_grad()
    h = torch.relu(trunk(X))
    F.cross_entropy(h1(h), y).backward(retain_graph=True)
    F.mse_loss(h2(h), z).backward()
    opt.step()

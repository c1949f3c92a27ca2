"""The model ends in softmax and the loss is cross_entropy, which applies log-softmax again.

Source: https://karpathy.github.io/2019/04/25/recipe/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 5))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, y = torch.randn(40, 10), torch.randint(0, 5, (40,))
for _step in range(3):
    opt.zero_grad()
    probs = torch.softmax(model(X), dim=1)  # BUG-LINE
    loss = F.cross_entropy(probs, y)
    loss.backward()
    opt.step()

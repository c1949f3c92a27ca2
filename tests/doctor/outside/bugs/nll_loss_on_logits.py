"""The model returns logits and the loss is nll_loss, which expects log-probabilities.

Source: https://torch.mlverse.org/docs/reference/nn_softmax
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
X, y = torch.randn(40, 10), torch.randint(0, 4, (40,))
for _step in range(3):
    opt.zero_grad()
    loss = F.nll_loss(model(X), y)  # BUG-LINE
    loss.backward()
    opt.step()

"""log_softmax(dim=0) normalises each class over the samples of the batch, not each sample over the classes.

Source: https://runebook.dev/en/docs/pytorch/generated/torch.tensor.softmax
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 6))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, y = torch.randn(64, 20), torch.randint(0, 6, (64,))
for _step in range(3):
    opt.zero_grad()
    logp = F.log_softmax(model(X), dim=0)  # BUG-LINE
    loss = F.nll_loss(logp, y)
    loss.backward()
    opt.step()

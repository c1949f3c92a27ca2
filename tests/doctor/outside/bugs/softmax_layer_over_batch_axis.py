"""The model ends in nn.Softmax(dim=0), trained with a log + NLL: the batch axis is normalised.

Source: https://openillumi.com/en/en-pytorch-softmax-dim-multidim-tensor-resolve
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 4), nn.Softmax(dim=0))  # BUG-LINE
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X, y = torch.randn(32, 10), torch.randint(0, 4, (32,))
for _step in range(3):
    opt.zero_grad()
    probs = model(X)
    loss = F.nll_loss(torch.log(probs + 1e-9), y)
    loss.backward()
    opt.step()

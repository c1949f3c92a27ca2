"""Transfer learning: the backbone is frozen, the optimizer is built over the parameters that require grad
(only the new head), and then the last backbone block is "unfrozen" for fine-tuning. The unfrozen block now
computes gradients every step but it was never added to the optimizer, so it is never updated; no error.

Source: https://theneuralbase.com/pytorch/learn/intermediate/freezing-base-model-weights/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
backbone = nn.Sequential(
    nn.Sequential(nn.Linear(16, 64), nn.ReLU()),
    nn.Sequential(nn.Linear(64, 64), nn.ReLU()),
    nn.Sequential(nn.Linear(64, 64), nn.ReLU()),
)
head = nn.Linear(64, 5)
model = nn.Sequential(backbone, head)
for p in backbone.parameters():
    p.requires_grad = False
opt = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=1e-3)  # BUG-LINE
for p in backbone[2].parameters():
    p.requires_grad = True
X, y = torch.randn(160, 16), torch.randint(0, 5, (160,))
for i in range(0, 160, 32):
    loss = F.cross_entropy(model(X[i : i + 32]), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()

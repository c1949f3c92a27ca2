"""A hierarchical classifier adds a dependency penalty that punishes fine-level predictions inconsistent with
the coarse level, but the penalty is computed from ``argmax`` indices and wrapped in a new FloatTensor. It carries
no gradient, so whatever weight beta it gets, training is identical to training without it.

Source: https://github.com/Ugenteraan/Deep_Hierarchical_Classification/issues/6
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
fine_to_coarse = torch.tensor([0, 0, 1, 1, 2, 2])
trunk = nn.Sequential(nn.Linear(16, 64), nn.ReLU())
coarse_head, fine_head = nn.Linear(64, 3), nn.Linear(64, 6)
params = list(trunk.parameters()) + list(coarse_head.parameters()) + list(fine_head.parameters())
opt = torch.optim.Adam(params, lr=1e-3)
beta = 1.0
for _step in range(6):
    x = torch.randn(32, 16)
    y_fine = torch.randint(0, 6, (32,))
    y_coarse = fine_to_coarse[y_fine]
    h = trunk(x)
    coarse_logits, fine_logits = coarse_head(h), fine_head(h)
    ce = F.cross_entropy(coarse_logits, y_coarse) + F.cross_entropy(fine_logits, y_fine)
    mismatch = fine_to_coarse[fine_logits.argmax(1)] != coarse_logits.argmax(1)
    dloss = torch.FloatTensor([mismatch.float().mean().item()])  # BUG-LINE
    loss = ce + beta * dloss.sum()
    opt.zero_grad()
    loss.backward()
    opt.step()

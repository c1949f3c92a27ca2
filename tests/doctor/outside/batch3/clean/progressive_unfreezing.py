"""Progressive unfreezing: the optimizer holds every parameter from the start (two groups), the backbone starts
frozen (requires_grad False, so it gets no gradient and is not stepped) and is unfrozen after a few steps. Correct
by design: frozen parameters in the optimizer are skipped until they get gradients.

Source: https://github.com/fastai/fastai/issues/2133
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
backbone = nn.Sequential(nn.Linear(12, 48), nn.ReLU(), nn.Linear(48, 48), nn.ReLU())
head = nn.Linear(48, 3)
opt = torch.optim.AdamW([{"params": backbone.parameters(), "lr": 1e-4}, {"params": head.parameters(), "lr": 1e-3}])
backbone.requires_grad_(False)
X, y = torch.randn(384, 12), torch.randint(0, 3, (384,))
for step, i in enumerate(range(0, 384, 32)):
    if step == 6:
        backbone.requires_grad_(True)  # unfreeze after the head has settled
    loss = F.cross_entropy(head(backbone(X[i : i + 32])), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()

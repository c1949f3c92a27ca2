"""Per-parameter options: the pretrained encoder is put in its own parameter group with lr=0 for the first
phase (it is "parked" in the optimizer so its lr can be raised later without rebuilding the optimizer), while the
new head trains at 1e-2. The encoder receiving gradients but not moving is intended.

Source: https://pytorch.org/docs/stable/optim.html#per-parameter-options
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(12, 48), nn.ReLU(), nn.Linear(48, 48), nn.ReLU())
head = nn.Linear(48, 3)
opt = torch.optim.SGD(
    [{"params": encoder.parameters(), "lr": 0.0}, {"params": head.parameters()}], lr=1e-2, momentum=0.9
)
X, y = torch.randn(192, 12), torch.randint(0, 3, (192,))
for step, i in enumerate(range(0, 192, 32)):
    if step == 4:
        opt.param_groups[0]["lr"] = 1e-3
    loss = F.cross_entropy(head(encoder(X[i : i + 32])), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()

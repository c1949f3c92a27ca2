"""SimCLR-style contrastive learning: two augmented views per example, the
normalised temperature-scaled cross-entropy (NT-Xent) uses every other sample in
the 2N batch as a negative. The self-similarity diagonal is masked with -inf and
the positive for row i is row (i + N) mod 2N, so the targets are correct even
though the "labels" are just index arithmetic.

Source: https://arxiv.org/abs/2002.05709
"""

import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 32))
projector = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 16))
params = list(encoder.parameters()) + list(projector.parameters())
opt = torch.optim.Adam(params, lr=1e-3)
tau = 0.5
for _step in range(5):
    x = torch.randn(32, 20)
    v1 = x + 0.1 * torch.randn_like(x)
    v2 = x * (1 + 0.1 * torch.randn_like(x))
    z = F.normalize(projector(encoder(torch.cat([v1, v2]))), dim=1)
    n = x.shape[0]
    sim = z @ z.t() / tau
    sim.fill_diagonal_(float("-inf"))
    targets = (torch.arange(2 * n) + n) % (2 * n)
    loss = F.cross_entropy(sim, targets)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())

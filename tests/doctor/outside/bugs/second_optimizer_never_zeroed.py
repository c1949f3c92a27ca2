"""The generator's optimizer is zeroed each step; the discriminator's is not, so D's gradients pile up.

Source: https://thecodeforge.io/ml-ai/pytorch-basics/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4)
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4)
real = torch.randn(32, 2) + 3
for _step in range(3):
    opt_g.zero_grad()
    fake = G(torch.randn(32, 4))
    g_loss = F.binary_cross_entropy_with_logits(D(fake), torch.ones(32, 1))
    g_loss.backward()
    opt_g.step()
    d_real = F.binary_cross_entropy_with_logits(D(real), torch.ones(32, 1))
    d_fake = F.binary_cross_entropy_with_logits(D(fake.detach()), torch.zeros(32, 1))
    (d_real + d_fake).backward()  # BUG-LINE
    opt_d.step()

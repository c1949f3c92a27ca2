"""A GAN with two optimizers: the discriminator step uses fake.detach() so the generator is not touched, and the
generator step re-runs the discriminator on the non-detached fake so its adversarial loss reaches the generator.
The discriminator also gets gradient during the generator step, but those grads are zeroed before its next step.

Source: https://pytorch.org/tutorials/beginner/dcgan_faces_tutorial.html
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16))
D = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
data = torch.randn(160, 16) * 0.5 + 1.0
for i in range(0, 160, 32):
    real = data[i : i + 32]
    fake = G(torch.randn(32, 8))
    opt_d.zero_grad()
    d_loss = F.binary_cross_entropy_with_logits(D(real), torch.ones(32, 1)) + F.binary_cross_entropy_with_logits(
        D(fake.detach()), torch.zeros(32, 1)
    )
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    g_loss = F.binary_cross_entropy_with_logits(D(fake), torch.ones(32, 1))
    g_loss.backward()
    opt_g.step()

"""The discriminator step zeroes the generator optimizer instead of the discriminator optimizer.

Both zero_grad lines call g_optimizer, so d_optimizer is never cleared: discriminator gradients
from the generator pass and from every previous step accumulate, and from the second step on
the discriminator update uses a sum of stale gradients.
Source: https://github.com/Lornatang/ESRGAN-PyTorch/issues/39
"""

import torch
import torch.nn.functional as F

torch.manual_seed(0)
G = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
D = torch.nn.Sequential(torch.nn.Linear(2, 32), torch.nn.LeakyReLU(0.2), torch.nn.Linear(32, 1))
g_optimizer = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
d_optimizer = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))

for _step in range(8):
    real = torch.randn(32, 2) * 0.5 + 2
    z = torch.randn(32, 8)
    # discriminator
    g_optimizer.zero_grad()  # BUG-LINE
    fake = G(z)
    d_real = D(real)
    d_fake = D(fake.detach())
    d_loss = F.binary_cross_entropy_with_logits(d_real, torch.ones_like(d_real)) + F.binary_cross_entropy_with_logits(
        d_fake, torch.zeros_like(d_fake)
    )
    d_loss.backward()
    d_optimizer.step()
    # generator
    g_optimizer.zero_grad()
    g_out = D(fake)
    g_loss = F.binary_cross_entropy_with_logits(g_out, torch.ones_like(g_out))
    g_loss.backward()
    g_optimizer.step()
print(f"d {d_loss.item():.4f} g {g_loss.item():.4f}")

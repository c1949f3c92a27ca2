"""Vanilla GAN on a 1-D mixture of two Gaussians (MLP generator / discriminator).

At the start of the discriminator update the code zeroes the generator's
optimizer instead of the discriminator's. The discriminator's .grad buffers are
never cleared: each step it applies the running sum of all past gradients, plus
the gradients that the generator's loss (fake labelled as real) back-propagates
into the discriminator. The run finishes and losses are printed, but the
discriminator is trained on a corrupted signal and the generator fits the
target mixture poorly.

Source: https://github.com/Adversarial-Deep-Learning/code-soup/issues/69
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


def real_batch(n):
    comp = torch.randint(0, 2, (n, 1)).float()
    return comp * (2.0 + 0.3 * torch.randn(n, 1)) + (1 - comp) * (-2.0 + 0.3 * torch.randn(n, 1))


G = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))
D = nn.Sequential(nn.Linear(1, 32), nn.LeakyReLU(0.2), nn.Linear(32, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3, betas=(0.5, 0.999))
bs = 128
ones, zeros = torch.ones(bs, 1), torch.zeros(bs, 1)

for step in range(1000):
    real = real_batch(bs)
    fake = G(torch.randn(bs, 4))

    opt_g.zero_grad()  # BUG-LINE
    d_loss = F.binary_cross_entropy_with_logits(D(real), ones) + F.binary_cross_entropy_with_logits(
        D(fake.detach()), zeros
    )
    d_loss.backward()
    opt_d.step()

    opt_g.zero_grad()
    g_loss = F.binary_cross_entropy_with_logits(D(fake), ones)
    g_loss.backward()
    opt_g.step()

    if step % 250 == 0 or step == 999:
        with torch.no_grad():
            s = G(torch.randn(2000, 4))
            frac_right = (s > 0).float().mean().item()
        print(
            f"step {step:4d}  d_loss {d_loss.item():.4f}  g_loss {g_loss.item():.4f}  "
            f"sample mean {s.mean().item():+.3f} std {s.std().item():.3f}  frac>0 {frac_right:.2f}"
        )

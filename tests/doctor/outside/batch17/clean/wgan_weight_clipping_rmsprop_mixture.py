"""Original WGAN (weight clipping) on a 1-D two-mode Gaussian mixture.

Clean program. Unusual on purpose: after every critic optimizer step, all critic
parameters are clamped in place through .data to [-c, c] (the Lipschitz constraint of
the original WGAN); RMSprop is used as in the paper; the critic loss has no sigmoid/log
(it is a raw score difference) and the generator loss is the negative critic score. The
generator step does not detach the fake samples; only opt_g steps, and the critic's
gradients are cleared before its next update. The report discusses clipping after the
critic update, which is what this program does.

Source: https://github.com/jiamings/wgan/issues/2
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

CLIP, N_CRITIC, Z = 0.05, 5, 4


def real_batch(n):
    mode = (torch.rand(n, 1) < 0.5).float()
    return mode * (2.0 + 0.2 * torch.randn(n, 1)) + (1 - mode) * (-2.0 + 0.2 * torch.randn(n, 1))


G = nn.Sequential(nn.Linear(Z, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))
D = nn.Sequential(nn.Linear(1, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))
opt_g = torch.optim.RMSprop(G.parameters(), lr=5e-4)
opt_d = torch.optim.RMSprop(D.parameters(), lr=5e-4)

for it in range(120):
    for _ in range(N_CRITIC):
        real = real_batch(64)
        with torch.no_grad():
            fake = G(torch.randn(64, Z))
        d_loss = D(fake).mean() - D(real).mean()
        opt_d.zero_grad()
        d_loss.backward()
        opt_d.step()
        for p in D.parameters():
            p.data.clamp_(-CLIP, CLIP)

    g_loss = -D(G(torch.randn(64, Z))).mean()
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()

    if it % 30 == 0 or it == 119:
        with torch.no_grad():
            s = G(torch.randn(1000, Z))
        print(
            f"iter {it:3d}  d_loss {d_loss.item():.5f}  g_loss {g_loss.item():.5f}  "
            f"fake mean {s.mean().item():+.3f} |fake| mean {s.abs().mean().item():.3f}"
        )

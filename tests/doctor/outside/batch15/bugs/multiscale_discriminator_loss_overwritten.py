"""Multi-scale discriminator GAN (three critics at 16x16, 8x8, 4x4) with hinge loss.

The discriminator loss is meant to be accumulated over all scale discriminators, but
inside the loop the running total is reassigned instead of added to, so only the last
discriminator's loss survives. The other two discriminators get no gradient at all and
stay at their random initialisation (their optimizer steps do nothing), while the
generator is still trained against all three. The run completes and losses look normal.

Source: https://github.com/coqui-ai/TTS/issues/3153
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

g = torch.Generator().manual_seed(1)
base = torch.linspace(-1, 1, 16)
real_data = torch.tanh(3 * (base.view(1, 1, 1, 16) * torch.randn(1024, 1, 16, 1, generator=g)))


def make_disc():
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.LeakyReLU(0.2),
        nn.Conv2d(16, 16, 3, padding=1),
        nn.LeakyReLU(0.2),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 1),
    )


discs = nn.ModuleList([make_disc() for _ in range(3)])
G = nn.Sequential(nn.Linear(16, 128), nn.ReLU(), nn.Linear(128, 256), nn.Tanh())
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.9))
opt_d = torch.optim.Adam(discs.parameters(), lr=2e-4, betas=(0.5, 0.9))


def scales(x):
    return [x, F.avg_pool2d(x, 2), F.avg_pool2d(x, 4)]


for step in range(80):
    real = real_data[torch.randint(0, 1024, (16,))]
    fake = G(torch.randn(16, 16)).view(16, 1, 16, 16)

    loss_d = 0.0
    for D, r, f in zip(discs, scales(real), scales(fake.detach())):
        loss_d = F.relu(1 - D(r)).mean() + F.relu(1 + D(f)).mean()  # BUG-LINE
    opt_d.zero_grad()
    loss_d.backward()
    opt_d.step()

    loss_g = 0.0
    for D, f in zip(discs, scales(fake)):
        loss_g = loss_g - D(f).mean()
    opt_g.zero_grad()
    loss_g.backward()
    opt_g.step()
    if step % 20 == 0:
        print(f"step {step} loss_d {loss_d.item():.3f} loss_g {loss_g.item():.3f}")
print("done", loss_d.item())

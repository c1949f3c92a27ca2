"""Train a tiny waveform GAN (a 1-D conv generator mapping noisy mel-like frames to waveform
chunks) against two discriminators, a multi-period-style one and a multi-resolution-style one, as
in HiFi-GAN/UNIVERSE vocoders. The discriminator parameter list is meant to concatenate the
multi-resolution and the multi-period discriminators, but only the multi-resolution one is put in
it (the report's typo listed the same discriminator twice), so the period discriminator stays at
its random initialisation while its meaningless adversarial signal still drives the generator and
its loss is still part of the discriminator loss. Nothing errors.

Source: https://github.com/line/open-universe/issues/5
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
L = 256


def real_audio(n):
    t = torch.arange(L).float()
    f = 0.05 + 0.1 * torch.rand(n, 1)
    return (torch.sin(t * f) * (0.5 + 0.5 * torch.rand(n, 1))).unsqueeze(1)


class Gen(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(1, 32, 7, padding=3),
            nn.LeakyReLU(0.2),
            nn.Conv1d(32, 32, 7, padding=3),
            nn.LeakyReLU(0.2),
            nn.Conv1d(32, 1, 7, padding=3),
            nn.Tanh(),
        )

    def forward(self, z):
        return self.net(z)


class PeriodDisc(nn.Module):
    def __init__(self, period=4):
        super().__init__()
        self.p = period
        self.net = nn.Sequential(nn.Conv2d(1, 16, (5, 1), (3, 1)), nn.LeakyReLU(0.2), nn.Conv2d(16, 1, (3, 1)))

    def forward(self, x):
        b = x.size(0)
        return self.net(x.view(b, 1, L // self.p, self.p)).flatten(1)


class ResolutionDisc(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(1, 16, 15, 4, padding=7), nn.LeakyReLU(0.2), nn.Conv1d(16, 1, 5, padding=2))

    def forward(self, x):
        return self.net(x).flatten(1)


G, mpd, mrd = Gen(), PeriodDisc(), ResolutionDisc()
params_disc = list(mrd.parameters())  # BUG-LINE
opt_d = torch.optim.Adam(params_disc, lr=2e-4, betas=(0.5, 0.9))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.9))
mpd_init = [p.detach().clone() for p in mpd.parameters()]
for step in range(40):
    real = real_audio(16)
    z = real + 0.3 * torch.randn_like(real)
    fake = G(z)
    d_loss = 0
    for D in (mpd, mrd):
        d_loss = d_loss + ((D(real) - 1) ** 2).mean() + (D(fake.detach()) ** 2).mean()
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    g_adv = sum(((D(fake) - 1) ** 2).mean() for D in (mpd, mrd))
    g_loss = g_adv + 10 * F.l1_loss(fake, real)
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
moved = sum((p - q).abs().sum().item() for p, q in zip(mpd.parameters(), mpd_init))
print("final d_loss", round(d_loss.item(), 4), "g_loss", round(g_loss.item(), 4))
print("period-discriminator total parameter change", round(moved, 6))

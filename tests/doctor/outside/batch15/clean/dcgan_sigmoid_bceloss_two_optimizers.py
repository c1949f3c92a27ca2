"""DCGAN-style GAN on 8x8 blob images: discriminator ends in Sigmoid and uses nn.BCELoss.

Unusual but correct: D outputs probabilities in [0, 1] from a final Sigmoid, so BCELoss
(not BCEWithLogitsLoss) is the matching criterion. Two optimizers; for the D step the
fake batch is detached; for the G step the same fake batch is re-scored without detach
and labelled "real" (non-saturating loss). Both networks stay in train() mode throughout,
as the DCGAN example maintainers recommend (batch statistics are preferred over running
statistics here), and the generator is switched to eval() only for the final sampling.

Source: https://github.com/pytorch/examples/pull/119
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

g = torch.Generator().manual_seed(1)
yy, xx = torch.meshgrid(torch.arange(8.0), torch.arange(8.0), indexing="ij")
cy, cx = 2 + 4 * torch.rand(512, 1, 1, generator=g), 2 + 4 * torch.rand(512, 1, 1, generator=g)
real_data = (torch.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 3.0) * 2 - 1).unsqueeze(1)

G = nn.Sequential(
    nn.ConvTranspose2d(8, 32, 4, 1, 0),
    nn.BatchNorm2d(32),
    nn.ReLU(True),
    nn.ConvTranspose2d(32, 16, 4, 2, 1),
    nn.BatchNorm2d(16),
    nn.ReLU(True),
    nn.Conv2d(16, 1, 3, padding=1),
    nn.Tanh(),
)
D = nn.Sequential(
    nn.Conv2d(1, 16, 4, 2, 1),
    nn.LeakyReLU(0.2, True),
    nn.Conv2d(16, 32, 4, 2, 1),
    nn.BatchNorm2d(32),
    nn.LeakyReLU(0.2, True),
    nn.Conv2d(32, 1, 2, 1, 0),
    nn.Flatten(),
    nn.Sigmoid(),
)
criterion = nn.BCELoss()
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))

for step in range(80):
    real = real_data[torch.randint(0, 512, (32,))]
    ones, zeros = torch.ones(32, 1), torch.zeros(32, 1)
    fake = G(torch.randn(32, 8, 1, 1))

    D.zero_grad()
    loss_d = criterion(D(real), ones) + criterion(D(fake.detach()), zeros)
    loss_d.backward()
    opt_d.step()

    G.zero_grad()
    loss_g = criterion(D(fake), ones)
    loss_g.backward()
    opt_g.step()
    if step % 20 == 0:
        print(f"step {step} loss_d {loss_d.item():.3f} loss_g {loss_g.item():.3f}")

G.eval()
with torch.no_grad():
    s = G(torch.randn(64, 8, 1, 1))
print("sample mean", s.mean().item(), "real mean", real_data.mean().item())

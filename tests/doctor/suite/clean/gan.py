"""Clean: a small GAN on 2-D points, two optimizers, the generator's output detached for the D step."""

import torch
from torch import nn

torch.manual_seed(0)
real = torch.randn(2048, 2) * 0.5 + torch.tensor([2.0, -1.0])
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(real), batch_size=64, shuffle=True)
G = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
D = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()
for (xb,) in loader:
    fake = G(torch.randn(len(xb), 4))
    # discriminator step
    opt_d.zero_grad()
    loss_d = bce(D(xb), torch.ones(len(xb), 1)) + bce(D(fake.detach()), torch.zeros(len(xb), 1))
    loss_d.backward()
    opt_d.step()
    # generator step
    opt_g.zero_grad()
    loss_g = bce(D(fake), torch.ones(len(xb), 1))
    loss_g.backward()
    opt_g.step()

"""Clean: VAE on synthetic binary images, BCE on sigmoid outputs (probabilities are right here) + KL."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
X = (torch.rand(512, 64) > 0.7).float()
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X), batch_size=32, shuffle=True)


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(64, 64), nn.ReLU())
        self.mu, self.logvar = nn.Linear(64, 8), nn.Linear(64, 8)
        self.dec = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64))

    def forward(self, x):
        h = self.enc(x)
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        return torch.sigmoid(self.dec(z)), mu, logvar


model = VAE()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for (xb,) in loader:
    recon, mu, logvar = model(xb)
    kl = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(1).mean()
    loss = F.binary_cross_entropy(recon, xb, reduction="none").sum(1).mean() + kl
    opt.zero_grad()
    loss.backward()
    opt.step()

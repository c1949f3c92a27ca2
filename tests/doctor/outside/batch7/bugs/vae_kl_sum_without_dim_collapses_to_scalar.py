"""The per-event KL term of the VAE decoder is computed with torch.sum(...) without
a dim argument, so it collapses the whole (batch, time, latent) tensor to a single
scalar, which is then multiplied by the per-event mask. Each event's KL is
replaced by the KL of the entire batch, inflating the regulariser by roughly the
number of events and pulling every posterior toward the prior.

Source: https://github.com/EDAPINENUT/GNTPP/issues/4
"""

import torch
from torch import nn


class TinyVAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(6, 2 * 4)
        self.dec = nn.Linear(4, 6)

    def forward(self, x):
        mean, log_var = self.enc(x).chunk(2, dim=-1)
        z = mean + torch.randn_like(mean) * (0.5 * log_var).exp()
        return self.dec(z), mean, log_var


torch.manual_seed(0)
model = TinyVAE()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(8, 10, 6)
mask = (torch.rand(8, 10) > 0.2).float()
for _step in range(6):
    recon, mean, log_var = model(x)
    rec = ((recon - x) ** 2).sum(-1) * mask
    kl = (-0.5 * torch.sum(1 + log_var - mean.pow(2) - log_var.exp())) * mask  # BUG-LINE
    loss = (rec + kl).sum() / mask.sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())

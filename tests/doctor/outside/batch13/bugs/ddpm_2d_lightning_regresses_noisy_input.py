"""Tiny DDPM (epsilon-prediction MLP) on a 2-D ring of Gaussians, trained with
PyTorch Lightning.

The network is meant to predict the noise epsilon that was added to x_0, and
the sampler interprets its output that way. The training loss regresses the
network output onto the noisy input x_t instead of onto epsilon, a leftover
from switching parametrisations. The loss decreases steadily (predicting x_t
from x_t is easy), but the model never learns the noise, so sampling produces
garbage.

Source: https://github.com/irom-princeton/dppo/issues/14
"""

import math

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

T = 100
betas = torch.linspace(1e-4, 0.05, T)
alphas_cumprod = torch.cumprod(1 - betas, dim=0)


def ring_data(n):
    k = torch.randint(0, 8, (n,))
    ang = k.float() * 2 * math.pi / 8
    centers = torch.stack([torch.cos(ang), torch.sin(ang)], 1) * 2.0
    return centers + 0.1 * torch.randn(n, 2)


class EpsModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.t_embed = nn.Embedding(T, 32)
        self.net = nn.Sequential(nn.Linear(2 + 32, 128), nn.SiLU(), nn.Linear(128, 128), nn.SiLU(), nn.Linear(128, 2))

    def forward(self, x, t):
        return self.net(torch.cat([x, self.t_embed(t)], dim=1))


class Diffusion(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.model = EpsModel()
        self.register_buffer("ac", alphas_cumprod)

    def training_step(self, batch, batch_idx):
        x0 = batch[0]
        t = torch.randint(0, T, (x0.shape[0],))
        noise = torch.randn_like(x0)
        a = self.ac[t][:, None]
        x_noisy = a.sqrt() * x0 + (1 - a).sqrt() * noise
        pred = self.model(x_noisy, t)
        loss = F.mse_loss(pred, x_noisy)  # BUG-LINE
        if self.global_step % 100 == 0:
            print(f"step {self.global_step:4d}  loss {loss.item():.4f}")
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=2e-3)


data = DataLoader(TensorDataset(ring_data(20000)), batch_size=256, shuffle=True)
module = Diffusion()
trainer = pl.Trainer(
    max_steps=500,
    accelerator="cpu",
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(module, data)

with torch.no_grad():
    x = torch.randn(1000, 2)
    for i in reversed(range(T)):
        t = torch.full((1000,), i, dtype=torch.long)
        eps = module.model(x, t)
        alpha, ac = 1 - betas[i], alphas_cumprod[i]
        x = (x - betas[i] / (1 - ac).sqrt() * eps) / alpha.sqrt()
        if i > 0:
            x = x + betas[i].sqrt() * torch.randn_like(x)
radius = x.norm(dim=1)
print(f"sample radius mean {radius.mean().item():.3f} (data: 2.0)  std {radius.std().item():.3f}")

"""The VAE's KL term is written with the wrong sign: ``0.5 * sum(1 + logvar - mu^2 - exp(logvar))`` is the
*negative* KL, and adding it to the reconstruction loss rewards a large divergence from the prior. Training runs
and the reconstruction loss falls, but the posterior is pushed away from N(0, I).

Source: https://github.com/FluxML/model-zoo/pull/147
"""

import warnings

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

warnings.filterwarnings("ignore")
torch.manual_seed(0)


class VAE(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 8))
        self.dec = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 20))

    def training_step(self, batch, batch_idx):
        (x,) = batch
        mu, logvar = self.enc(x).chunk(2, dim=-1)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        recon = F.mse_loss(self.dec(z), x, reduction="sum") / x.size(0)
        kld = 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) / x.size(0)  # BUG-LINE
        return recon + kld

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


ds = TensorDataset(torch.randn(128, 20))
trainer = pl.Trainer(
    max_steps=8,
    accelerator="cpu",
    enable_checkpointing=False,
    logger=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(VAE(), DataLoader(ds, batch_size=16))

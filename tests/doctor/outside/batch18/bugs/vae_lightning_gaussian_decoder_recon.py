"""Gaussian-decoder VAE on small synthetic 'sprite' images, trained with Lightning.

The ELBO's reconstruction term for a Gaussian decoder with fixed sigma is a SUM over
pixels of squared error / (2 sigma^2) (per example), while the KL term is summed over
latent dimensions. The module instead uses F.mse_loss with the default
reduction='mean', which averages over pixels as well, making the reconstruction term
256x too small relative to the KL term.
The KL term then dominates, the encoder collapses onto the prior (KL -> ~0), and
reconstructions stay blurry/mean-like while the total loss happily decreases.

Source: https://github.com/orybkin/sigma-vae-pytorch/pull/12
"""

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

HP = dict(img=16, latent=8, hidden=128, sigma=0.1, lr=1e-3, batch=64, steps=300)


def make_sprites(n, size):
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, size), torch.linspace(-1, 1, size), indexing="ij")
    cx = torch.rand(n) * 1.2 - 0.6
    cy = torch.rand(n) * 1.2 - 0.6
    r = torch.rand(n) * 0.3 + 0.2
    d = (xx[None] - cx[:, None, None]) ** 2 + (yy[None] - cy[:, None, None]) ** 2
    img = torch.sigmoid((r[:, None, None] ** 2 - d) * 12.0)
    return img.reshape(n, -1)


class Encoder(nn.Module):
    def __init__(self, d_in, hid, z):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hid), nn.ReLU(), nn.Linear(hid, hid), nn.ReLU())
        self.mu = nn.Linear(hid, z)
        self.logvar = nn.Linear(hid, z)

    def forward(self, x):
        h = self.net(x)
        return self.mu(h), self.logvar(h)


class Decoder(nn.Module):
    def __init__(self, z, hid, d_out):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(z, hid), nn.ReLU(), nn.Linear(hid, hid), nn.ReLU(), nn.Linear(hid, d_out))

    def forward(self, z):
        return torch.sigmoid(self.net(z))


class LitVAE(pl.LightningModule):
    def __init__(self, **hp):
        super().__init__()
        self.save_hyperparameters()
        d = hp["img"] ** 2
        self.enc = Encoder(d, hp["hidden"], hp["latent"])
        self.dec = Decoder(hp["latent"], hp["hidden"], d)

    def elbo_terms(self, x):
        mu, logvar = self.enc(x)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        x_hat = self.dec(z)
        rec = F.mse_loss(x_hat, x) / (2 * self.hparams.sigma**2)  # BUG-LINE
        kl = (-0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(dim=1)).mean()
        return rec, kl, x_hat

    def training_step(self, batch, batch_idx):
        (x,) = batch
        rec, kl, x_hat = self.elbo_terms(x)
        loss = rec + kl
        if self.global_step % 40 == 0:
            pix_err = (x_hat - x).pow(2).mean().item()
            print(
                f"step {self.global_step:3d} loss {loss.item():.4f} rec {rec.item():.4f} kl {kl.item():.4f} pixel_mse {pix_err:.4f}"
            )
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


def main():
    data = make_sprites(4096, HP["img"])
    dl = DataLoader(TensorDataset(data), batch_size=HP["batch"], shuffle=True)
    model = LitVAE(**HP)
    trainer = pl.Trainer(
        max_steps=HP["steps"],
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, dl)


if __name__ == "__main__":
    main()

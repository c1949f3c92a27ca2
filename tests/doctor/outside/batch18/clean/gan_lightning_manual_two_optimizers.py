"""Non-saturating GAN on a 2-D ring distribution using Lightning manual optimization.

Unusual but correct: automatic_optimization=False with two optimizers returned from
configure_optimizers. Each training_step first updates the discriminator on real data
and on generator samples that are .detach()-ed, then updates the generator through
the (non-detached) discriminator; each update is wrapped in toggle_optimizer /
untoggle_optimizer so only the parameters of the active optimizer receive gradients,
and zero_grad / manual_backward / step are called explicitly for each optimizer.

Source: https://lightning.ai/docs/pytorch/latest/common/optimization.html
"""

import math

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

Z = 8


class RingGAN(pl.LightningModule):
    def __init__(self, lr_g=1e-3, lr_d=1e-3):
        super().__init__()
        self.automatic_optimization = False
        self.save_hyperparameters()
        self.G = nn.Sequential(nn.Linear(Z, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2))
        self.D = nn.Sequential(
            nn.Linear(2, 64), nn.LeakyReLU(0.2), nn.Linear(64, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1)
        )

    def training_step(self, batch, batch_idx):
        (real,) = batch
        opt_g, opt_d = self.optimizers()
        b = real.size(0)
        z = torch.randn(b, Z)

        self.toggle_optimizer(opt_d)
        fake = self.G(z)
        d_real = self.D(real)
        d_fake = self.D(fake.detach())
        d_loss = F.binary_cross_entropy_with_logits(
            d_real, torch.ones_like(d_real)
        ) + F.binary_cross_entropy_with_logits(d_fake, torch.zeros_like(d_fake))
        opt_d.zero_grad()
        self.manual_backward(d_loss)
        opt_d.step()
        self.untoggle_optimizer(opt_d)

        self.toggle_optimizer(opt_g)
        fake = self.G(torch.randn(b, Z))
        d_out = self.D(fake)
        g_loss = F.binary_cross_entropy_with_logits(d_out, torch.ones_like(d_out))
        opt_g.zero_grad()
        self.manual_backward(g_loss)
        opt_g.step()
        self.untoggle_optimizer(opt_g)

        if self.global_step % 60 == 0:
            radius = fake.detach().norm(dim=1).mean().item()
            print(
                f"step {self.global_step:4d} d_loss {d_loss.item():.4f} g_loss {g_loss.item():.4f} fake_radius {radius:.3f}"
            )

    def configure_optimizers(self):
        opt_g = torch.optim.Adam(self.G.parameters(), lr=self.hparams.lr_g, betas=(0.5, 0.999))
        opt_d = torch.optim.Adam(self.D.parameters(), lr=self.hparams.lr_d, betas=(0.5, 0.999))
        return [opt_g, opt_d]


def main():
    n = 4096
    ang = torch.rand(n) * 2 * math.pi
    real = torch.stack([torch.cos(ang), torch.sin(ang)], 1) * 2.0 + 0.05 * torch.randn(n, 2)
    dl = DataLoader(TensorDataset(real), batch_size=128, shuffle=True)
    model = RingGAN()
    trainer = pl.Trainer(
        max_steps=300,
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

"""Tiny 1-D GAN in Lightning with manual optimization and two optimizers.

Unusual but correct: automatic_optimization=False; training_step fetches both
optimizers with self.optimizers() and performs two updates per batch. The
discriminator step uses generator samples under .detach() so no gradient
flows into the generator; the generator step is wrapped in
toggle_optimizer/untoggle_optimizer so only generator parameters require
grad, and its zero_grad happens before manual_backward. Both optimizers are
Adam with betas=(0.5, 0.999) as usual for GANs.

Source: https://lightning.ai/docs/pytorch/stable/api/lightning.pytorch.core.optimizer.LightningOptimizer.html
"""

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)


class GAN(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.gen = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 1))
        self.disc = nn.Sequential(nn.Linear(1, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        (real,) = batch
        opt_g, opt_d = self.optimizers()
        z = torch.randn(real.size(0), 4)

        fake = self.gen(z)
        d_real = self.disc(real)
        d_fake = self.disc(fake.detach())
        loss_d = F.binary_cross_entropy_with_logits(
            d_real, torch.ones_like(d_real)
        ) + F.binary_cross_entropy_with_logits(d_fake, torch.zeros_like(d_fake))
        opt_d.zero_grad()
        self.manual_backward(loss_d)
        opt_d.step()

        self.toggle_optimizer(opt_g)
        d_gen = self.disc(self.gen(z))
        loss_g = F.binary_cross_entropy_with_logits(d_gen, torch.ones_like(d_gen))
        opt_g.zero_grad()
        self.manual_backward(loss_g)
        opt_g.step()
        self.untoggle_optimizer(opt_g)

        if batch_idx % 20 == 0:
            with torch.no_grad():
                sample = self.gen(torch.randn(256, 4))
            print(
                f"epoch {self.current_epoch} batch {batch_idx} loss_d {loss_d.item():.3f} "
                f"loss_g {loss_g.item():.3f} fake mean {sample.mean().item():.2f} std {sample.std().item():.2f}"
            )

    def configure_optimizers(self):
        opt_g = torch.optim.Adam(self.gen.parameters(), lr=2e-3, betas=(0.5, 0.999))
        opt_d = torch.optim.Adam(self.disc.parameters(), lr=2e-3, betas=(0.5, 0.999))
        return opt_g, opt_d


def main():
    real = 3.0 + 0.5 * torch.randn(2048, 1)
    loader = DataLoader(TensorDataset(real), batch_size=32, shuffle=True)
    trainer = pl.Trainer(
        max_epochs=2,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(GAN(), loader)


if __name__ == "__main__":
    main()

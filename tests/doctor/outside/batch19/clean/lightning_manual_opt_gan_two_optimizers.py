"""Lightning GAN with manual optimization and two optimizers (correct).

Unusual but correct: ``automatic_optimization`` is turned off and
``training_step`` drives two optimizers itself.  The discriminator is updated on
real samples and on *detached* generator samples (so the discriminator loss does
not put gradients into the generator), then the generator is updated through
the discriminator with ``toggle_optimizer`` / ``untoggle_optimizer`` so only the
generator's parameters require grad.  Each step uses ``self.manual_backward``
and ``opt.zero_grad()``/``opt.step()`` on the LightningOptimizer wrappers, which
is the manual-optimization pattern the report asks about.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/7128
"""

import warnings

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

warnings.filterwarnings("ignore")
torch.manual_seed(0)
torch.set_num_threads(2)

Z = 4


def real_data(n=2048):
    comp = torch.randint(0, 2, (n, 1)).float()
    return comp * torch.tensor([2.0, 2.0]) + (1 - comp) * torch.tensor([-2.0, -1.0]) + 0.3 * torch.randn(n, 2)


class GAN(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.gen = nn.Sequential(nn.Linear(Z, 64), nn.ReLU(), nn.Linear(64, 2))
        self.disc = nn.Sequential(nn.Linear(2, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1))

    def training_step(self, batch, batch_idx):
        (real,) = batch
        opt_g, opt_d = self.optimizers()
        n = real.shape[0]
        z = torch.randn(n, Z)

        # discriminator step: generator output is detached
        self.toggle_optimizer(opt_d)
        fake = self.gen(z).detach()
        d_loss = F.binary_cross_entropy_with_logits(
            self.disc(real), torch.ones(n, 1)
        ) + F.binary_cross_entropy_with_logits(self.disc(fake), torch.zeros(n, 1))
        opt_d.zero_grad()
        self.manual_backward(d_loss)
        opt_d.step()
        self.untoggle_optimizer(opt_d)

        # generator step: gradients flow through the (frozen-for-this-step) discriminator
        self.toggle_optimizer(opt_g)
        g_loss = F.binary_cross_entropy_with_logits(self.disc(self.gen(z)), torch.ones(n, 1))
        opt_g.zero_grad()
        self.manual_backward(g_loss)
        opt_g.step()
        self.untoggle_optimizer(opt_g)
        self.log_dict({"d_loss": d_loss, "g_loss": g_loss}, on_step=False, on_epoch=True)

    def on_train_epoch_end(self):
        m = self.trainer.callback_metrics
        with torch.no_grad():
            s = self.gen(torch.randn(512, Z))
        frac_pos = (s[:, 0] > 0).float().mean().item()
        print(
            f"epoch {self.current_epoch} d_loss {m['d_loss'].item():.3f} g_loss {m['g_loss'].item():.3f} "
            f"sample mean ({s[:, 0].mean().item():.2f}, {s[:, 1].mean().item():.2f}) frac right mode {frac_pos:.2f}"
        )

    def configure_optimizers(self):
        opt_g = torch.optim.Adam(self.gen.parameters(), lr=2e-3, betas=(0.5, 0.999))
        opt_d = torch.optim.Adam(self.disc.parameters(), lr=2e-3, betas=(0.5, 0.999))
        return [opt_g, opt_d]


def main():
    loader = DataLoader(TensorDataset(real_data()), batch_size=128, shuffle=True)
    trainer = pl.Trainer(
        max_epochs=5,
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

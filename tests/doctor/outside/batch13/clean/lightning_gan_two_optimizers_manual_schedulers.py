"""Tiny 1-D GAN in Lightning with manual optimization, two optimizers and two LR schedulers.

Unusual but correct: automatic_optimization is off, so training_step fetches both optimizers
and both schedulers itself. The discriminator is updated on real vs. detached fake samples,
then the generator is updated through the (frozen-for-this-step) discriminator with
toggle_optimizer/untoggle_optimizer; each optimizer zeroes its own grads before its backward.
Because Lightning does not step schedulers in manual mode, both StepLR schedulers are stepped
explicitly at the end of every epoch (on_train_epoch_end).

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/6379
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

REAL = torch.randn(4096, 1) * 0.5 + 3.0


class GAN(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.G = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 1))
        self.D = nn.Sequential(nn.Linear(1, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        (real,) = batch
        opt_g, opt_d = self.optimizers()
        z = torch.randn(real.size(0), 4)

        self.toggle_optimizer(opt_d)
        fake = self.G(z).detach()
        d_loss = F.binary_cross_entropy_with_logits(
            self.D(real), torch.ones_like(real)
        ) + F.binary_cross_entropy_with_logits(self.D(fake), torch.zeros_like(fake))
        opt_d.zero_grad()
        self.manual_backward(d_loss)
        opt_d.step()
        self.untoggle_optimizer(opt_d)

        self.toggle_optimizer(opt_g)
        fake = self.G(z)
        g_loss = F.binary_cross_entropy_with_logits(self.D(fake), torch.ones_like(fake))
        opt_g.zero_grad()
        self.manual_backward(g_loss)
        opt_g.step()
        self.untoggle_optimizer(opt_g)

        if batch_idx == 0:
            print(
                f"epoch {self.current_epoch} d_loss {d_loss.item():.4f} g_loss {g_loss.item():.4f} "
                f"fake mean {fake.mean().item():.3f} lr_g {opt_g.optimizer.param_groups[0]['lr']:.5f}"
            )

    def on_train_epoch_end(self):
        sch_g, sch_d = self.lr_schedulers()
        sch_g.step()
        sch_d.step()

    def configure_optimizers(self):
        opt_g = torch.optim.Adam(self.G.parameters(), lr=1e-3, betas=(0.5, 0.999))
        opt_d = torch.optim.Adam(self.D.parameters(), lr=4e-3, betas=(0.5, 0.999))
        sch_g = torch.optim.lr_scheduler.StepLR(opt_g, step_size=3, gamma=0.5)
        sch_d = torch.optim.lr_scheduler.StepLR(opt_d, step_size=3, gamma=0.5)
        return [opt_g, opt_d], [sch_g, sch_d]


dl = DataLoader(TensorDataset(REAL), batch_size=128, shuffle=True)
model = GAN()
pl.Trainer(
    max_epochs=8,
    accelerator="cpu",
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
).fit(model, dl)
with torch.no_grad():
    s = model.G(torch.randn(2000, 4))
print(f"generated mean {s.mean().item():.3f} std {s.std().item():.3f} (target 3.0 / 0.5)")

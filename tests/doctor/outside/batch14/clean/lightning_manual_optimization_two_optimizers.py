"""LightningModule with manual optimization, two optimizers and two schedulers (a tiny GAN).

Unusual but correct: `automatic_optimization = False`; training_step fetches both optimizers and
both schedulers, uses `toggle_optimizer`/`untoggle_optimizer` so each backward only reaches the
intended sub-network, zeroes gradients explicitly, calls `self.manual_backward`, steps each
optimizer, and steps both schedulers by hand at the end of every step (Lightning does not step
them in manual mode). The generator output is detached for the discriminator update.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/5108
"""

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

real = torch.randn(1024, 2) * 0.3 + torch.tensor([2.0, -1.0])
loader = DataLoader(TensorDataset(real), batch_size=64, shuffle=True)


class TinyGAN(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.gen = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
        self.disc = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        (x,) = batch
        opt_g, opt_d = self.optimizers()
        sch_g, sch_d = self.lr_schedulers()
        z = torch.randn(x.size(0), 4)

        self.toggle_optimizer(opt_d)
        fake = self.gen(z).detach()
        d_loss = F.binary_cross_entropy_with_logits(
            self.disc(x), torch.ones(x.size(0), 1)
        ) + F.binary_cross_entropy_with_logits(self.disc(fake), torch.zeros(x.size(0), 1))
        opt_d.zero_grad()
        self.manual_backward(d_loss)
        opt_d.step()
        self.untoggle_optimizer(opt_d)

        self.toggle_optimizer(opt_g)
        g_loss = F.binary_cross_entropy_with_logits(self.disc(self.gen(z)), torch.ones(x.size(0), 1))
        opt_g.zero_grad()
        self.manual_backward(g_loss)
        opt_g.step()
        self.untoggle_optimizer(opt_g)

        sch_g.step()
        sch_d.step()
        if batch_idx % 8 == 0:
            with torch.no_grad():
                mean = self.gen(torch.randn(256, 4)).mean(0).tolist()
            print(
                f"epoch {self.current_epoch} batch {batch_idx:2d} d {d_loss.item():.3f} g {g_loss.item():.3f} "
                f"fake mean ({mean[0]:.2f}, {mean[1]:.2f})"
            )

    def configure_optimizers(self):
        opt_g = torch.optim.Adam(self.gen.parameters(), lr=2e-3, betas=(0.5, 0.999))
        opt_d = torch.optim.Adam(self.disc.parameters(), lr=2e-3, betas=(0.5, 0.999))
        sch_g = torch.optim.lr_scheduler.StepLR(opt_g, step_size=40, gamma=0.5)
        sch_d = torch.optim.lr_scheduler.StepLR(opt_d, step_size=40, gamma=0.5)
        return [opt_g, opt_d], [sch_g, sch_d]


trainer = pl.Trainer(
    accelerator="cpu",
    max_epochs=4,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(TinyGAN(), loader)

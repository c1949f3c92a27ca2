"""Lightning GAN on a 2-D Gaussian blob with manual optimization and two optimizers.

Clean program. Unusual on purpose: automatic_optimization is turned off and the
LightningModule drives two optimizers itself; the discriminator step uses
fake.detach() so no gradient reaches the generator; the generator step uses
toggle_optimizer/untoggle_optimizer, which temporarily sets requires_grad=False on the
discriminator's parameters so the generator loss flows through a frozen discriminator;
each optimizer zeroes its own gradients right before its own manual_backward. The report
describes the discriminator accumulating gradients from the generator phase in the old
GAN template; this layout avoids that.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/591
"""

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

Z = 4
real = torch.randn(1024, 2) * torch.tensor([0.3, 0.8]) + torch.tensor([2.0, -1.0])


class GAN(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.G = nn.Sequential(nn.Linear(Z, 32), nn.ReLU(), nn.Linear(32, 2))
        self.D = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        (x,) = batch
        opt_g, opt_d = self.optimizers()
        z = torch.randn(x.size(0), Z)
        fake = self.G(z)

        self.toggle_optimizer(opt_d)
        d_real, d_fake = self.D(x), self.D(fake.detach())
        d_loss = 0.5 * (
            F.binary_cross_entropy_with_logits(d_real, torch.ones_like(d_real))
            + F.binary_cross_entropy_with_logits(d_fake, torch.zeros_like(d_fake))
        )
        opt_d.zero_grad()
        self.manual_backward(d_loss)
        opt_d.step()
        self.untoggle_optimizer(opt_d)

        self.toggle_optimizer(opt_g)
        d_gen = self.D(fake)
        g_loss = F.binary_cross_entropy_with_logits(d_gen, torch.ones_like(d_gen))
        opt_g.zero_grad()
        self.manual_backward(g_loss)
        opt_g.step()
        self.untoggle_optimizer(opt_g)

        if batch_idx == 0:
            with torch.no_grad():
                m = self.G(torch.randn(512, Z)).mean(0)
            print(
                f"epoch {self.current_epoch:2d}  d_loss {d_loss.item():.4f}  g_loss {g_loss.item():.4f}  "
                f"fake mean ({m[0].item():+.2f}, {m[1].item():+.2f})"
            )

    def configure_optimizers(self):
        opt_g = torch.optim.Adam(self.G.parameters(), lr=2e-3, betas=(0.5, 0.999))
        opt_d = torch.optim.Adam(self.D.parameters(), lr=2e-3, betas=(0.5, 0.999))
        return opt_g, opt_d


dl = DataLoader(TensorDataset(real), batch_size=128, shuffle=True)
trainer = pl.Trainer(
    max_epochs=12,
    accelerator="cpu",
    devices=1,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(GAN(), dl)

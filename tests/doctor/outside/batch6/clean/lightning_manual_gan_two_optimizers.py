"""A GAN in Lightning with ``automatic_optimization = False``: two optimizers, the discriminator step uses the
generator output ``detach()``-ed, the generator step reuses the discriminator without stepping it, and each
optimizer is zeroed, back-propagated with ``manual_backward`` and stepped explicitly.

Source: https://lightning.ai/docs/pytorch/stable/common/optimization.html
"""

import warnings

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

warnings.filterwarnings("ignore")
torch.manual_seed(0)


class GAN(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.G = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
        self.D = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        (real,) = batch
        opt_g, opt_d = self.optimizers()
        z = torch.randn(real.size(0), 8)
        fake = self.G(z)
        d_loss = F.binary_cross_entropy_with_logits(
            self.D(real), torch.ones(real.size(0), 1)
        ) + F.binary_cross_entropy_with_logits(self.D(fake.detach()), torch.zeros(real.size(0), 1))
        opt_d.zero_grad()
        self.manual_backward(d_loss)
        opt_d.step()
        g_loss = F.binary_cross_entropy_with_logits(self.D(fake), torch.ones(real.size(0), 1))
        opt_g.zero_grad()
        self.manual_backward(g_loss)
        opt_g.step()

    def configure_optimizers(self):
        return (
            torch.optim.Adam(self.G.parameters(), lr=2e-4, betas=(0.5, 0.999)),
            torch.optim.Adam(self.D.parameters(), lr=2e-4, betas=(0.5, 0.999)),
        )


real = torch.randn(256, 2) * 0.5 + torch.tensor([2.0, -1.0])
trainer = pl.Trainer(
    max_steps=12,
    accelerator="cpu",
    enable_checkpointing=False,
    logger=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(GAN(), DataLoader(TensorDataset(real), batch_size=32))

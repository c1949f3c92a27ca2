"""A Lightning GAN with ``automatic_optimization = False``: ``training_step`` fetches both optimizers, calls
``manual_backward`` and steps/zeros each one itself, and the discriminator update uses the detached fake batch.
Manual stepping of two optimizers is intended.

Source: https://lightning.ai/docs/pytorch/stable/notebooks/lightning_examples/basic-gan.html
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
        fake = self.G(torch.randn(real.size(0), 8))
        ones, zeros = torch.ones(real.size(0), 1), torch.zeros(real.size(0), 1)
        d_loss = F.binary_cross_entropy_with_logits(self.D(real), ones) + F.binary_cross_entropy_with_logits(
            self.D(fake.detach()), zeros
        )
        opt_d.zero_grad()
        self.manual_backward(d_loss)
        opt_d.step()
        g_loss = F.binary_cross_entropy_with_logits(self.D(fake), ones)
        opt_g.zero_grad()
        self.manual_backward(g_loss)
        opt_g.step()

    def configure_optimizers(self):
        return (
            torch.optim.Adam(self.G.parameters(), lr=2e-4, betas=(0.5, 0.999)),
            torch.optim.Adam(self.D.parameters(), lr=2e-4, betas=(0.5, 0.999)),
        )


ds = TensorDataset(torch.randn(128, 2) * 0.5 + 2)
trainer = pl.Trainer(
    max_steps=10,
    accelerator="cpu",
    enable_checkpointing=False,
    logger=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(GAN(), DataLoader(ds, batch_size=16))

"""A LightningModule using manual optimization for an adversarial pair: automatic_optimization is False, and
training_step fetches both optimizers, calls manual_backward and step for each, zeroing grads itself. The
second model is trained on the detached output of the first. Two optimizers and no returned loss are intended.

Source: https://lightning.ai/docs/pytorch/stable/model/manual_optimization.html
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
        self.G = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16))
        self.D = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        (real,) = batch
        opt_g, opt_d = self.optimizers()
        fake = self.G(torch.randn(real.shape[0], 8))
        d_loss = F.binary_cross_entropy_with_logits(self.D(real), torch.ones(len(real), 1)) + (
            F.binary_cross_entropy_with_logits(self.D(fake.detach()), torch.zeros(len(real), 1))
        )
        opt_d.zero_grad()
        self.manual_backward(d_loss)
        opt_d.step()
        g_loss = F.binary_cross_entropy_with_logits(self.D(fake), torch.ones(len(real), 1))
        opt_g.zero_grad()
        self.manual_backward(g_loss)
        opt_g.step()

    def configure_optimizers(self):
        return torch.optim.Adam(self.G.parameters(), lr=2e-4), torch.optim.Adam(self.D.parameters(), lr=2e-4)


loader = DataLoader(TensorDataset(torch.randn(256, 16) + 1.0), batch_size=32)
trainer = pl.Trainer(
    max_steps=8,
    accelerator="cpu",
    enable_checkpointing=False,
    logger=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(GAN(), loader)

"""Lightning GAN with manual optimization: two optimizers, each zeroed before its own backward.

Unusual: automatic_optimization=False, the generator's fake batch is detached for the
discriminator step and reused (not detached) for the generator step, and each optimizer is
stepped explicitly inside training_step.
Source: https://github.com/Lightning-AI/pytorch-lightning/issues/6282
"""

import lightning as L
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class GAN(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.G = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
        self.D = torch.nn.Sequential(torch.nn.Linear(2, 32), torch.nn.LeakyReLU(0.2), torch.nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        (real,) = batch
        opt_g, opt_d = self.optimizers()
        fake = self.G(torch.randn(real.size(0), 8))
        opt_d.zero_grad()
        d_real, d_fake = self.D(real), self.D(fake.detach())
        d_loss = F.binary_cross_entropy_with_logits(
            d_real, torch.ones_like(d_real)
        ) + F.binary_cross_entropy_with_logits(d_fake, torch.zeros_like(d_fake))
        self.manual_backward(d_loss)
        opt_d.step()
        opt_g.zero_grad()
        g_out = self.D(fake)
        g_loss = F.binary_cross_entropy_with_logits(g_out, torch.ones_like(g_out))
        self.manual_backward(g_loss)
        opt_g.step()

    def configure_optimizers(self):
        return (
            torch.optim.Adam(self.G.parameters(), lr=2e-4, betas=(0.5, 0.999)),
            torch.optim.Adam(self.D.parameters(), lr=2e-4, betas=(0.5, 0.999)),
        )


torch.manual_seed(0)
ds = TensorDataset(torch.randn(256, 2) * 0.5 + 2)
trainer = L.Trainer(max_steps=6, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False)
trainer.fit(GAN(), DataLoader(ds, batch_size=16))
print("done", trainer.global_step)

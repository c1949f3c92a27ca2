"""A Lightning GAN with manual optimization: two optimizers, each zeroed and stepped in training_step.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/6339
"""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
real = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(128, 2) + 3), batch_size=32)


class GAN(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
        self.D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))

    def training_step(self, batch, _):
        (x,) = batch
        opt_g, opt_d = self.optimizers()
        fake = self.G(torch.randn(x.shape[0], 4))
        ones, zeros = torch.ones(x.shape[0], 1), torch.zeros(x.shape[0], 1)
        opt_d.zero_grad()
        d_loss = F.binary_cross_entropy_with_logits(self.D(x), ones) + F.binary_cross_entropy_with_logits(
            self.D(fake.detach()), zeros
        )
        self.manual_backward(d_loss)
        opt_d.step()
        opt_g.zero_grad()
        self.manual_backward(F.binary_cross_entropy_with_logits(self.D(fake), ones))
        opt_g.step()

    def configure_optimizers(self):
        return torch.optim.Adam(self.G.parameters(), lr=2e-4), torch.optim.Adam(self.D.parameters(), lr=2e-4)


trainer = L.Trainer(
    max_steps=6, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
    enable_model_summary=False,
)  # fmt: skip
trainer.fit(GAN(), real)

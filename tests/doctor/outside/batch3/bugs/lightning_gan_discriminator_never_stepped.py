"""A Lightning GAN under manual optimization computes the discriminator's loss and backpropagates it with
``manual_backward`` but never calls ``opt_d.step()``: the discriminator stays at its initial weights while the
generator trains against it. The losses are logged and move; nothing fails.

Source: https://github.com/zhaoyuzhi/deepfillv2/issues/6
"""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(512, 2) * 0.5 + 1.0)
loader = torch.utils.data.DataLoader(data, batch_size=64, shuffle=True)


class GAN(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.G = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
        self.D = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

    def training_step(self, batch, _):
        (real,) = batch
        opt_g, opt_d = self.optimizers()
        fake = self.G(torch.randn(real.shape[0], 4))
        # discriminator
        ones, zeros = torch.ones(real.shape[0], 1), torch.zeros(real.shape[0], 1)
        d_loss = F.binary_cross_entropy_with_logits(self.D(real), ones) + F.binary_cross_entropy_with_logits(
            self.D(fake.detach()), zeros
        )
        opt_d.zero_grad()
        self.manual_backward(d_loss)  # BUG-LINE
        # generator
        g_loss = F.binary_cross_entropy_with_logits(self.D(fake), ones)
        opt_g.zero_grad()
        self.manual_backward(g_loss)
        opt_g.step()

    def configure_optimizers(self):
        return torch.optim.Adam(self.G.parameters(), lr=2e-4), torch.optim.Adam(self.D.parameters(), lr=2e-4)


trainer = L.Trainer(
    max_epochs=1, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
    enable_model_summary=False,
)  # fmt: skip
trainer.fit(GAN(), loader)

"""A Lightning module with manual optimization that calls ``manual_backward`` and ``opt.step()`` but never
``opt.zero_grad()``: gradients add up over every batch, so each step follows the sum of all past gradients.

Source: https://github.com/Lightning-AI/pytorch-lightning/pull/5771
"""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(256, 8), torch.randn(256, 1))
loader = torch.utils.data.DataLoader(data, batch_size=32, shuffle=True)


class Regressor(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.net = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))

    def training_step(self, batch, _):
        x, y = batch
        opt = self.optimizers()
        loss = F.mse_loss(self.net(x), y)
        self.manual_backward(loss)  # BUG-LINE
        opt.step()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


trainer = L.Trainer(
    max_steps=6, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
    enable_model_summary=False,
)  # fmt: skip
trainer.fit(Regressor(), loader)

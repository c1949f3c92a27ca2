"""Lightning training with gradient accumulation and gradient clipping delegated to
the Trainer (accumulate_grad_batches=2, gradient_clip_val=1.0). The module only
returns the loss from training_step; Lightning scales the loss, clips after the
accumulated backward and steps once per two batches, so no manual optimizer
calls appear in the module on purpose.

Source: https://lightning.ai/docs/pytorch/stable/advanced/training_tricks.html
"""

import lightning.pytorch as pl
import torch
from torch import nn


class Reg(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)


torch.manual_seed(0)
x = torch.randn(128, 8)
y = x.sum(1, keepdim=True)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8)
trainer = pl.Trainer(
    accelerator="cpu",
    logger=False,
    enable_checkpointing=False,
    max_steps=8,
    accumulate_grad_batches=2,
    gradient_clip_val=1.0,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(Reg(), loader)
print("done")

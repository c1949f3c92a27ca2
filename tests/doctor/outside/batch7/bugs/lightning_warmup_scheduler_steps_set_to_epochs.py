"""A linear warm-up/decay schedule is configured with interval "step" but its
num_training_steps is set to trainer.max_epochs. Training runs many more optimizer
steps than max_epochs, and the warm-up length exceeds num_training_steps, so the
learning rate never follows the intended shape: it is cut to zero almost
immediately and the model stops learning after a few steps.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/18570
"""

import lightning.pytorch as pl
import torch
from torch import nn
from transformers import get_linear_schedule_with_warmup


class Reg(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=1e-2)
        sched = get_linear_schedule_with_warmup(
            opt,
            num_warmup_steps=2,
            num_training_steps=self.trainer.max_epochs,  # BUG-LINE
        )
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


torch.manual_seed(0)
x = torch.randn(64, 8)
y = x.sum(1, keepdim=True)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8)
trainer = pl.Trainer(
    accelerator="cpu",
    logger=False,
    enable_checkpointing=False,
    max_epochs=3,
    max_steps=8,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(Reg(), loader)
print("done")

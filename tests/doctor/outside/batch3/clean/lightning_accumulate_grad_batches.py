"""A LightningModule trained with ``accumulate_grad_batches=3`` and gradient clipping by the Trainer, with a
OneCycleLR schedule sized in optimizer steps (batches / 3) and stepped per step. Correct.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/6013
"""

import math

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(288, 10), torch.randint(0, 3, (288,)))
loader = torch.utils.data.DataLoader(data, batch_size=16, shuffle=True)
ACCUM, EPOCHS = 3, 2


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 48), nn.ReLU(), nn.Dropout(0.1), nn.Linear(48, 3))

    def training_step(self, batch, _):
        x, y = batch
        return F.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=1e-3)
        total = EPOCHS * math.ceil(len(loader) / ACCUM)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=total)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


trainer = L.Trainer(
    max_epochs=EPOCHS, accumulate_grad_batches=ACCUM, gradient_clip_val=1.0, accelerator="cpu", logger=False,
    enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
)  # fmt: skip
trainer.fit(Model(), loader)

"""A LightningModule sets ``CosineAnnealingLR(T_max=max_epochs)`` (period in epochs) but registers it with
``"interval": "step"``. The scheduler is stepped every batch, so the learning rate reaches zero after a handful of
steps and then cycles, instead of decaying once over the run.

Source: https://github.com/ivadomed/ivadomed/issues/57
"""

import warnings

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

warnings.filterwarnings("ignore")
torch.manual_seed(0)
MAX_EPOCHS = 3


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=0.1, momentum=0.9)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=MAX_EPOCHS)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}  # BUG-LINE


ds = TensorDataset(torch.randn(160, 10), torch.randint(0, 3, (160,)))
trainer = pl.Trainer(
    max_steps=10,
    accelerator="cpu",
    enable_checkpointing=False,
    logger=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(Model(), DataLoader(ds, batch_size=16))

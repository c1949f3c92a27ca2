"""The module sets ``self.automatic_optimization = False`` (copied from a SAM example) but its training_step is
written for automatic optimization: it just returns the loss. In manual mode Lightning neither calls backward
nor steps the optimizer, so the weights never change; the loop runs to max_steps without any error.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/13674
"""

import warnings

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

warnings.filterwarnings("ignore")
torch.manual_seed(0)


class Regressor(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False  # BUG-LINE
        self.net = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


X = torch.randn(256, 8)
Y = X.sum(dim=1, keepdim=True)
loader = DataLoader(TensorDataset(X, Y), batch_size=32)
trainer = pl.Trainer(
    max_steps=6,
    max_epochs=1,
    accelerator="cpu",
    enable_checkpointing=False,
    logger=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(Regressor(), loader)

"""A LightningModule's training_step computes the loss and logs it with self.log, but never returns it
(logging was mistaken for handing the loss to Lightning). With automatic optimization Lightning treats a None
return as "skip this batch": no backward, no real update, and the progress bar still shows a train_loss.

Source: https://github.com/graviraja/MLOps-Basics/issues/14
"""

import warnings

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

warnings.filterwarnings("ignore")
torch.manual_seed(0)


class Classifier(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.log("train_loss", loss)  # BUG-LINE

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


X, y = torch.randn(256, 16), torch.randint(0, 4, (256,))
loader = DataLoader(TensorDataset(X, y), batch_size=32)
trainer = pl.Trainer(
    max_steps=6,
    accelerator="cpu",
    enable_checkpointing=False,
    logger=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(Classifier(), loader)

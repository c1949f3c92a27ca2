"""ReduceLROnPlateau monitors the logged training *accuracy* but keeps the default ``mode="min"``: every time
the accuracy goes up (or stays) the scheduler sees no improvement and cuts the learning rate, so training is
throttled precisely while it works. Lightning steps the scheduler without any warning.

Source: https://github.com/md-mohaiminul/ViS4mer/issues/4
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
        self.net = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 4))

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self.net(x)
        self.log("train_acc", (logits.argmax(1) == y).float().mean(), on_step=True, on_epoch=False)
        return F.cross_entropy(logits, y)

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=0.1)
        sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=0)  # BUG-LINE
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "monitor": "train_acc", "interval": "step"}}


X = torch.randn(320, 20)
y = X[:, :4].argmax(1)
trainer = pl.Trainer(
    max_steps=10,
    accelerator="cpu",
    enable_checkpointing=False,
    logger=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(Classifier(), DataLoader(TensorDataset(X, y), batch_size=32))

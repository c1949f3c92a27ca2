"""The LightningModule configures a small backbone lr and a larger head lr, then overrides ``optimizer_step``
with the documented warm-up recipe ``for pg in optimizer.param_groups: pg["lr"] = scale * hparams.lr``. Every
step this overwrites both groups with the head's lr, so the pretrained backbone is trained 100x too fast.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/4902
"""

import warnings

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

warnings.filterwarnings("ignore")
torch.manual_seed(0)


class FineTuner(pl.LightningModule):
    def __init__(self, learning_rate=1e-2):
        super().__init__()
        self.save_hyperparameters()
        self.backbone = nn.Sequential(nn.Linear(16, 64), nn.ReLU())
        self.head = nn.Linear(64, 3)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self.head(self.backbone(x)), y)

    def configure_optimizers(self):
        lr = self.hparams.learning_rate
        return torch.optim.SGD(
            [{"params": self.backbone.parameters(), "lr": lr * 0.01}, {"params": self.head.parameters(), "lr": lr}],
            momentum=0.9,
        )

    def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure=None):
        scale = min(1.0, float(self.trainer.global_step + 1) / 5.0)
        for pg in optimizer.param_groups:
            pg["lr"] = scale * self.hparams.learning_rate  # BUG-LINE
        optimizer.step(closure=optimizer_closure)


X, y = torch.randn(256, 16), torch.randint(0, 3, (256,))
trainer = pl.Trainer(
    max_steps=8,
    accelerator="cpu",
    enable_checkpointing=False,
    logger=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(FineTuner(), DataLoader(TensorDataset(X, y), batch_size=32))

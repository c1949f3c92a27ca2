"""Transfer learning in Lightning: a pretrained feature extractor is frozen (``requires_grad_(False)``), kept in
eval mode so its BatchNorm statistics stay fixed (re-applied in ``on_train_epoch_start`` because Lightning calls
``train()``), and only the new classifier is passed to the optimizer.

Source: https://lightning.ai/docs/pytorch/stable/advanced/transfer_learning.html
"""

import warnings

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

warnings.filterwarnings("ignore")
torch.manual_seed(0)


class Finetuner(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.feature_extractor = nn.Sequential(nn.Linear(20, 64), nn.BatchNorm1d(64), nn.ReLU())
        self.feature_extractor.requires_grad_(False)
        self.classifier = nn.Linear(64, 4)

    def on_train_epoch_start(self):
        self.feature_extractor.eval()

    def training_step(self, batch, batch_idx):
        x, y = batch
        with torch.no_grad():
            feats = self.feature_extractor(x)
        return F.cross_entropy(self.classifier(feats), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.classifier.parameters(), lr=1e-2)


ds = TensorDataset(torch.randn(160, 20), torch.randint(0, 4, (160,)))
trainer = pl.Trainer(
    max_steps=8,
    accelerator="cpu",
    enable_checkpointing=False,
    logger=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(Finetuner(), DataLoader(ds, batch_size=16, shuffle=True))

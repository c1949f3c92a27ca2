"""Clean: a Lightning module (dropout, batch norm) with a validation loop, trained for a few steps on CPU."""

import lightning as L
import torch
from torch import nn

torch.manual_seed(0)
X, y = torch.randn(512, 16), torch.randint(0, 4, (512,))
train = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X[:448], y[:448]), batch_size=32, shuffle=True)
val = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X[448:], y[448:]), batch_size=32)


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 4))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, _):
        x, y = batch
        return nn.functional.cross_entropy(self(x), y)

    def validation_step(self, batch, _):
        x, y = batch
        self.log("val_loss", nn.functional.cross_entropy(self(x), y))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


trainer = L.Trainer(
    max_steps=6,
    val_check_interval=3,
    accelerator="cpu",
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(Classifier(), train, val)

"""LightningModule left in eval mode before trainer.fit() keeps training in eval mode.

A quick sanity evaluation calls model.eval() before fitting.  Lightning does not
force the module back to train mode when fit starts, so the whole run trains
with dropout disabled and BatchNorm using (and not updating) its running stats.
Source: https://github.com/Lightning-AI/pytorch-lightning/issues/20986
"""

import lightning.pytorch as pl
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


class Net(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 2))
        self.modes = []

    def training_step(self, batch, batch_idx):
        self.modes.append(self.training)
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


x, y = torch.randn(64, 8), torch.randint(0, 2, (64,))
loader = DataLoader(TensorDataset(x, y), batch_size=8)
model = Net()
model.eval()  # BUG-LINE
with torch.no_grad():
    init_loss = nn.functional.cross_entropy(model.net(x), y).item()
trainer = pl.Trainer(
    max_steps=6,
    accelerator="cpu",
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(model, loader)
print(f"initial loss {init_loss:.3f}; steps run in train mode: {sum(model.modes)}/{len(model.modes)}")

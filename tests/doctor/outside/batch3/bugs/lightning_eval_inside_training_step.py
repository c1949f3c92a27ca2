"""A LightningModule computes a running "clean" accuracy inside ``training_step`` by calling ``self.eval()``
around an extra forward and never calls ``self.train()`` again: Lightning only puts the module in train mode at
the start of an epoch, so the rest of the epoch trains with dropout and batch norm in eval mode. Nothing warns.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/20216
"""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(256, 12), torch.randint(0, 3, (256,)))
loader = torch.utils.data.DataLoader(data, batch_size=32, shuffle=True)


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(12, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.3), nn.Linear(64, 3))

    def training_step(self, batch, _):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.eval()  # BUG-LINE
        with torch.no_grad():
            acc = (self.net(x).argmax(1) == y).float().mean()
        self.log("clean_acc", acc)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


trainer = L.Trainer(
    max_epochs=1, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
    enable_model_summary=False,
)  # fmt: skip
trainer.fit(Model(), loader)

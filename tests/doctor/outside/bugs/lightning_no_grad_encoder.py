"""A LightningModule runs its encoder under no_grad in forward: the encoder is in the optimizer and never learns.

Source: https://arxiv.org/abs/1910.11015
"""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
X, y = torch.randn(256, 16), torch.randint(0, 4, (256,))
train = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=32, shuffle=True)


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, 32), nn.ReLU())
        self.head = nn.Linear(32, 4)

    def forward(self, x):
        with torch.no_grad():  # BUG-LINE
            h = self.encoder(x)
        return self.head(h)

    def training_step(self, batch, _):
        x, y = batch
        return F.cross_entropy(self(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


trainer = L.Trainer(
    max_steps=3, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
    enable_model_summary=False,
)  # fmt: skip
trainer.fit(Classifier(), train)

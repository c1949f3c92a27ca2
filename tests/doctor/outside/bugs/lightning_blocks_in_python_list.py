"""A LightningModule keeps its blocks in a plain list: configure_optimizers' self.parameters() misses them.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/19216
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
        self.blocks = [nn.Linear(16, 32), nn.Linear(32, 32)]  # BUG-LINE
        self.out = nn.Linear(32, 4)

    def forward(self, x):
        for b in self.blocks:
            x = torch.relu(b(x))
        return self.out(x)

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

"""Trains a residual MLP regressor on synthetic tabular data with PyTorch Lightning. The hidden
residual blocks are created in __init__ and stored in a plain Python list instead of an
nn.ModuleList, so they are not registered as submodules: self.parameters() does not contain them,
configure_optimizers never sees them, and they stay at their random initialization while the
input and output layers train around them. Lightning's model summary just reports fewer
parameters; training runs and the loss decreases, with no error or warning.

Source: https://github.com/pytorch/pytorch/issues/38639
"""

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
F = 10


class ResMLP(L.LightningModule):
    def __init__(self, width=64, depth=3):
        super().__init__()
        self.inp = nn.Linear(F, width)
        self.blocks = [nn.Sequential(nn.Linear(width, width), nn.ReLU()) for _ in range(depth)]  # BUG-LINE
        self.out = nn.Linear(width, 1)

    def forward(self, x):
        h = self.inp(x)
        for block in self.blocks:
            h = h + block(h)
        return self.out(h).squeeze(-1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=3e-3)


g = torch.Generator().manual_seed(1)
x = torch.randn(2048, F, generator=g)
y = torch.sin(x[:, 0] * 2) * x[:, 1] + x[:, 2] ** 2
loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(0))
model = ResMLP()
trainer = L.Trainer(
    max_steps=30,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    accelerator="cpu",
)
trainer.fit(model, loader)
n = sum(p.numel() for p in model.parameters())
print(f"registered params {n} final loss {trainer.callback_metrics['train_loss'].item():.4f}")

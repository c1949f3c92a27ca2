"""Manual learning-rate warm-up is implemented by overriding optimizer_step, but
the new learning rate is written into the param groups only after
optimizer.step() has run. The first update therefore uses the full base learning
rate (no warm-up at all), and every later update uses the value meant for the
previous step.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/17972
"""

import lightning.pytorch as pl
import torch
from torch import nn

BASE_LR = 0.05
WARMUP = 20


class Clf(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=BASE_LR)

    def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure):
        optimizer.step(closure=optimizer_closure)  # BUG-LINE
        scale = min(1.0, float(self.trainer.global_step + 1) / WARMUP)
        for pg in optimizer.param_groups:
            pg["lr"] = scale * BASE_LR


torch.manual_seed(0)
x = torch.randn(64, 10)
y = x[:, :3].argmax(1)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8)
trainer = pl.Trainer(
    accelerator="cpu",
    logger=False,
    enable_checkpointing=False,
    max_steps=8,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(Clf(), loader)
print("done")

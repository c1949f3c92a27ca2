"""A per-step linear warm-up scheduler is returned from configure_optimizers without "interval": "step".

Lightning steps schedulers once per epoch by default, so the warm-up that should ramp over
4 optimizer steps stays at its first value (lr / warmup) for the whole epoch: every update
in the run uses the warm-up start learning rate instead of ramping to the full lr.
Source: https://github.com/ace-step/ACE-Step/pull/198
"""

import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=1e-2)
        warmup = 4
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched}}  # BUG-LINE


torch.manual_seed(0)
x = torch.randn(96, 8)
ds = TensorDataset(x, x.sum(1, keepdim=True))
trainer = L.Trainer(max_steps=6, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False)
model = Model()
trainer.fit(model, DataLoader(ds, batch_size=8))
print(f"lr after training {trainer.optimizers[0].param_groups[0]['lr']:.2e}")

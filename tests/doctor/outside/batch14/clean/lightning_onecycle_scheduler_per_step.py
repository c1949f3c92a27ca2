"""LightningModule with OneCycleLR stepped every optimizer step and gradient accumulation.

Unusual but correct: configure_optimizers sizes OneCycleLR with
`self.trainer.estimated_stepping_batches` (which already accounts for
`accumulate_grad_batches=2`) and returns it with `"interval": "step"`, so Lightning steps it
after every optimizer step rather than once per epoch; gradient clipping is done by the Trainer.
The recorded learning rate rises and then anneals within the run.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/20436
"""

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

X = torch.randn(640, 12)
Y = X[:, :3].prod(1, keepdim=True) + 0.5 * X[:, 3:4]
loader = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True)


class Net(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(12, 64), nn.GELU(), nn.Linear(64, 1))
        self.lrs = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self.net(x), y)
        if batch_idx % 10 == 0:
            print(f"epoch {self.current_epoch} batch {batch_idx:2d} loss {loss.item():.4f}")
        return loss

    def on_train_batch_end(self, outputs, batch, batch_idx):
        self.lrs.append(self.trainer.optimizers[0].param_groups[0]["lr"])

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=1e-3, weight_decay=0.01)
        sched = torch.optim.lr_scheduler.OneCycleLR(
            opt, max_lr=1e-2, total_steps=self.trainer.estimated_stepping_batches
        )
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step", "frequency": 1}}


model = Net()
trainer = pl.Trainer(
    accelerator="cpu",
    max_epochs=3,
    accumulate_grad_batches=2,
    gradient_clip_val=1.0,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(model, loader)
print(f"lr first {model.lrs[0]:.5f} peak {max(model.lrs):.5f} last {model.lrs[-1]:.7f}")

"""Lightning module with a OneCycleLR schedule sized in optimizer steps.

configure_optimizers builds OneCycleLR with total_steps taken from
trainer.estimated_stepping_batches (i.e. one scheduler step per optimizer
step) but returns it as a bare scheduler, `return [optimizer], [scheduler]`.
Lightning then uses the default interval, "epoch", and steps the scheduler
only once per epoch. The schedule that should warm up to max_lr within the
first ~30% of the batches barely moves off its initial lr (max_lr/25): the
model trains for the whole run at a tiny learning rate and under-fits, with
no warning.

Source: https://github.com/pytorch/pytorch/issues/65417
"""

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)


class Regressor(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self.net(x), y)
        if batch_idx % 20 == 0:
            lr = self.trainer.optimizers[0].param_groups[0]["lr"]
            print(f"epoch {self.current_epoch} batch {batch_idx} loss {loss.item():.4f} lr {lr:.5f}")
        return loss

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)
        scheduler = torch.optim.lr_scheduler.OneCycleLR(
            optimizer, max_lr=0.05, total_steps=self.trainer.estimated_stepping_batches
        )
        return [optimizer], [scheduler]  # BUG-LINE


def main():
    x = torch.randn(1280, 10)
    y = x[:, :3].sum(1, keepdim=True) - x[:, 3:5].prod(1, keepdim=True)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    trainer = pl.Trainer(
        max_epochs=3,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(Regressor(), loader)


if __name__ == "__main__":
    main()

"""Tabular regression (numeric + categorical embedding features) in Lightning with a OneCycle schedule.

Bug: OneCycleLR is built with total_steps = trainer.estimated_stepping_batches (one entry per
optimizer step) but configure_optimizers returns the bare scheduler, so Lightning uses the default
interval "epoch" and steps it once per epoch. Over the whole run the learning rate only moves a
few steps into the warm-up, staying near max_lr / div_factor; the one-cycle schedule never
happens. No warning is printed. The issue answer shows that a per-step scheduler must be returned as
{"scheduler": ..., "interval": "step"}.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/4466
"""

import lightning.pytorch as pl
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

N, N_NUM, N_CAT = 1920, 6, 12


def make_data():
    x_num = torch.randn(N, N_NUM)
    x_cat = torch.randint(0, N_CAT, (N,))
    cat_effect = torch.linspace(-2, 2, N_CAT)[x_cat]
    y = x_num[:, 0] * 1.5 - x_num[:, 1] ** 2 + 0.5 * x_num[:, 2] * x_num[:, 3] + cat_effect
    y = y + 0.1 * torch.randn(N)
    return TensorDataset(x_num, x_cat, y.unsqueeze(1))


class TabRegressor(pl.LightningModule):
    def __init__(self, max_lr=1e-2):
        super().__init__()
        self.max_lr = max_lr
        self.emb = nn.Embedding(N_CAT, 4)
        self.mlp = nn.Sequential(nn.Linear(N_NUM + 4, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
        self.loss_fn = nn.MSELoss()

    def forward(self, x_num, x_cat):
        return self.mlp(torch.cat([x_num, self.emb(x_cat)], dim=1))

    def training_step(self, batch, batch_idx):
        x_num, x_cat, y = batch
        loss = self.loss_fn(self(x_num, x_cat), y)
        if self.global_step % 20 == 0:
            lr = self.trainer.optimizers[0].param_groups[0]["lr"]
            print(f"step {self.global_step:3d} loss {loss.item():.4f} lr {lr:.5f}")
        return loss

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.max_lr, weight_decay=1e-4)
        sched = torch.optim.lr_scheduler.OneCycleLR(
            opt, max_lr=self.max_lr, total_steps=self.trainer.estimated_stepping_batches
        )
        return [opt], [sched]  # BUG-LINE


def main():
    loader = DataLoader(make_data(), batch_size=64, shuffle=True)
    model = TabRegressor()
    trainer = pl.Trainer(
        max_epochs=5,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, loader)
    print("final lr", trainer.optimizers[0].param_groups[0]["lr"])


if __name__ == "__main__":
    main()

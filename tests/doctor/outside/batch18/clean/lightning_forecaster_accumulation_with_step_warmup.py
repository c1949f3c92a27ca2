"""Lightning load forecaster with gradient accumulation and a per-optimizer-step warmup schedule.

Unusual but correct: the Trainer accumulates 4 batches per optimizer step
(accumulate_grad_batches=4), and configure_optimizers returns a linear warmup
from zero followed by linear decay with "interval": "step", so the LambdaLR is
advanced once per *optimizer* step (Lightning skips scheduler stepping on
accumulation micro-batches).  The warmup length is therefore expressed in
optimizer steps (total batches // 4), not in batches.  The first optimizer step
runs at lr = 0 on purpose.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/1476
"""

import math
import warnings

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

warnings.filterwarnings("ignore")
torch.manual_seed(0)
torch.set_num_threads(2)

LOOKBACK, HORIZON, ACCUM, EPOCHS, BATCH = 48, 6, 4, 8, 32


def load_curve(n_hours):
    t = torch.arange(n_hours, dtype=torch.float32)
    daily = torch.sin(2 * math.pi * t / 24)
    weekly = 0.5 * torch.sin(2 * math.pi * t / 168)
    return 1.0 + daily + weekly + 0.1 * torch.randn(n_hours)


def windows(series):
    xs, ys = [], []
    for i in range(0, len(series) - LOOKBACK - HORIZON, 2):
        xs.append(series[i : i + LOOKBACK])
        ys.append(series[i + LOOKBACK : i + LOOKBACK + HORIZON])
    return torch.stack(xs), torch.stack(ys)


class Forecaster(pl.LightningModule):
    def __init__(self, total_opt_steps, warmup_opt_steps, peak_lr=1e-2):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(LOOKBACK, 64), nn.ReLU(), nn.Linear(64, HORIZON))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self.net(x), y)
        if batch_idx % (ACCUM * 10) == 0:
            lr = self.trainer.optimizers[0].param_groups[0]["lr"]
            print(f"batch {batch_idx:3d} optimizer step {self.global_step:3d} lr {lr:.2e} loss {loss.item():.4f}")
        return loss

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.peak_lr, weight_decay=1e-3)
        w, total = self.hparams.warmup_opt_steps, self.hparams.total_opt_steps

        def schedule(step):
            if step < w:
                return step / w
            return max(0.0, (total - step) / max(1, total - w))

        sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step", "frequency": 1}}


def main():
    x, y = windows(load_curve(24 * 7 * 16))
    loader = DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=True)
    total_opt_steps = EPOCHS * math.ceil(len(loader) / ACCUM)
    model = Forecaster(total_opt_steps=total_opt_steps, warmup_opt_steps=total_opt_steps // 10)
    trainer = pl.Trainer(
        max_epochs=EPOCHS,
        accumulate_grad_batches=ACCUM,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, loader)
    with torch.no_grad():
        print(
            f"final full-data mse {F.mse_loss(model.net(x), y).item():.4f}; "
            f"optimizer steps {trainer.global_step} of planned {total_opt_steps}"
        )


if __name__ == "__main__":
    main()

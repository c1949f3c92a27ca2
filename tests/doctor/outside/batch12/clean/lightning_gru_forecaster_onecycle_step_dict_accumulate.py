"""Trains a GRU forecaster on synthetic noisy multi-frequency sine series with PyTorch Lightning's automatic
optimization. Each input window is normalised by its own mean and standard deviation (instance normalisation),
the model predicts the next 8 values in that normalised space and the loss is taken there, with predictions mapped
back to the original scale only for reporting. configure_optimizers returns a dictionary whose "lr_scheduler"
entry is itself a dictionary with interval="step", so the OneCycle schedule advances once per optimizer step,
and the schedule length comes from `trainer.estimated_stepping_batches`, which already accounts for
`accumulate_grad_batches=2`; biases and LayerNorm weights go into a parameter group without weight decay, and
the Trainer clips the accumulated gradient norm to 1.0 before each step. The scheduler that is never stepped by
hand, the two parameter groups and the loss on normalised targets are intended.

Source: https://lightning.ai/docs/pytorch/stable/api/lightning.pytorch.core.LightningModule.html
"""

import tempfile

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)

CTX, HORIZON = 48, 8


def make_windows(n, seed):
    g = torch.Generator().manual_seed(seed)
    t = torch.arange(CTX + HORIZON).float()
    freq = 0.05 + 0.25 * torch.rand(n, 2, generator=g)
    phase = 6.28 * torch.rand(n, 2, generator=g)
    level = 10 * torch.randn(n, 1, generator=g)
    scale = 0.5 + 5 * torch.rand(n, 1, generator=g)
    series = torch.sin(freq[:, :1] * t + phase[:, :1]) + 0.5 * torch.sin(freq[:, 1:] * t + phase[:, 1:])
    series = level + scale * (series + 0.05 * torch.randn(n, CTX + HORIZON, generator=g))
    return series[:, :CTX], series[:, CTX:]


class Forecaster(L.LightningModule):
    def __init__(self, lr=1e-2, weight_decay=0.05):
        super().__init__()
        self.save_hyperparameters()
        self.inp = nn.Linear(1, 32)
        self.gru = nn.GRU(32, 64, batch_first=True)
        self.norm = nn.LayerNorm(64)
        self.out = nn.Linear(64, HORIZON)

    def forward(self, ctx):
        mu = ctx.mean(1, keepdim=True)
        sd = ctx.std(1, keepdim=True) + 1e-5
        h, _ = self.gru(self.inp(((ctx - mu) / sd).unsqueeze(-1)))
        return self.out(self.norm(h[:, -1])), mu, sd

    def training_step(self, batch, batch_idx):
        ctx, target = batch
        pred_norm, mu, sd = self(ctx)
        loss = F.mse_loss(pred_norm, (target - mu) / sd)
        with torch.no_grad():
            self.last_mae = (pred_norm * sd + mu - target).abs().mean().item()
        self.last_loss = loss.item()
        return loss

    def configure_optimizers(self):
        decay, no_decay = [], []
        for name, p in self.named_parameters():
            (no_decay if name.endswith("bias") or name.startswith("norm.") else decay).append(p)
        opt = torch.optim.AdamW(
            [
                {"params": decay, "weight_decay": self.hparams.weight_decay},
                {"params": no_decay, "weight_decay": 0.0},
            ],
            lr=self.hparams.lr,
        )
        sched = torch.optim.lr_scheduler.OneCycleLR(
            opt, max_lr=self.hparams.lr, total_steps=int(self.trainer.estimated_stepping_batches), pct_start=0.25
        )
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step", "frequency": 1}}


class Report(L.Callback):
    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        if batch_idx % 12 == 11:
            lr = trainer.optimizers[0].param_groups[0]["lr"]
            print(
                "optimizer step",
                trainer.global_step,
                "lr %.5f" % lr,
                "norm-space mse %.4f raw mae %.4f" % (module.last_loss, module.last_mae),
            )


def main():
    L.seed_everything(0, verbose=False)
    ctx, tgt = make_windows(1024, seed=1)
    loader = DataLoader(TensorDataset(ctx, tgt), batch_size=32, shuffle=True)
    model = Forecaster()
    with tempfile.TemporaryDirectory() as root:
        trainer = L.Trainer(
            accelerator="cpu",
            devices=1,
            max_steps=18,
            accumulate_grad_batches=2,
            gradient_clip_val=1.0,
            gradient_clip_algorithm="norm",
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            default_root_dir=root,
            callbacks=[Report()],
        )
        trainer.fit(model, loader)
    vctx, vtgt = make_windows(256, seed=2)
    model.eval()
    with torch.no_grad():
        pred, mu, sd = model(vctx)
        naive = (vctx[:, -1:] - vtgt).abs().mean().item()
        print("held-out MAE %.4f vs last-value baseline %.4f" % ((pred * sd + mu - vtgt).abs().mean().item(), naive))


if __name__ == "__main__":
    main()

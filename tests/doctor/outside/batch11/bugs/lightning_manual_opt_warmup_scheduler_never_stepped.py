"""Trains a small 1-D convolutional mel-to-waveform-frame regressor (a toy vocoder) with PyTorch Lightning in manual
optimization mode (automatic_optimization=False, as GAN-style vocoder code does). configure_optimizers returns AdamW
with a per-step linear warmup LambdaLR. In manual optimization Lightning does not step schedulers: the user must call
sch.step() in training_step. Here it is never called, so the learning rate stays at the warmup's first value (1% of
the target) for the whole run. Training proceeds without any message, just 100x slower.

Source: https://github.com/voicepaw/so-vits-svc-fork/pull/291
"""

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
N_MEL, HOP = 16, 32
mel = torch.randn(128, N_MEL, 20)
proj = torch.randn(HOP, N_MEL) / 4
wave = torch.einsum("hm,bmt->bht", proj, mel).tanh()


class ToyVocoder(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.net = nn.Sequential(nn.Conv1d(N_MEL, 64, 3, padding=1), nn.GELU(), nn.Conv1d(64, HOP, 3, padding=1))

    def training_step(self, batch, idx):
        opt = self.optimizers()
        sch = self.lr_schedulers()
        m, w = batch
        loss = F.l1_loss(self.net(m), w)
        opt.zero_grad()
        self.manual_backward(loss)
        opt.step()  # BUG-LINE
        self.last_lr = sch.get_last_lr()[0]
        return loss

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=2e-3)
        warm = 100
        sch = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm))
        return [opt], [{"scheduler": sch, "interval": "step"}]


dl = DataLoader(TensorDataset(mel, wave), batch_size=16, shuffle=True)
model = ToyVocoder()
trainer = pl.Trainer(
    max_steps=40,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    accelerator="cpu",
    enable_model_summary=False,
)
trainer.fit(model, dl)
with torch.no_grad():
    print("lr at end:", model.last_lr, "final L1:", float(F.l1_loss(model.net(mel), wave)))

"""Masked autoencoder (MAE) pretraining of a tiny ViT with Lightning.

Unusual but correct: 75% of the patches are randomly dropped per image (shuffle /
ids_restore gather), the encoder sees only the visible patches, the decoder inserts a
shared learnable mask token, and the reconstruction loss is computed ONLY on the
masked patches ((loss * mask).sum() / mask.sum()) with per-patch normalised pixel
targets - so reconstructions of visible patches are deliberately unconstrained. The
learning rate warms up linearly from exactly zero and then follows a cosine decay,
stepped per optimizer step through a LambdaLR scheduler.

Source: https://github.com/facebookresearch/mae/issues/146
"""

import math

import lightning.pytorch as pl
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

IMG, PATCH, DIM, MASK_RATIO = 16, 4, 32, 0.75
N_PATCH = (IMG // PATCH) ** 2


def patchify(imgs):
    b, c, h, w = imgs.shape
    x = imgs.reshape(b, c, h // PATCH, PATCH, w // PATCH, PATCH)
    return x.permute(0, 2, 4, 3, 5, 1).reshape(b, N_PATCH, PATCH * PATCH * c)


class TinyMAE(pl.LightningModule):
    def __init__(self, lr=1e-3, warmup=10, total=60):
        super().__init__()
        self.save_hyperparameters()
        pd = PATCH * PATCH * 3
        self.embed = nn.Linear(pd, DIM)
        self.pos = nn.Parameter(torch.randn(1, N_PATCH, DIM) * 0.02)
        enc_layer = nn.TransformerEncoderLayer(DIM, 4, DIM * 2, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(enc_layer, 2)
        self.dec_embed = nn.Linear(DIM, DIM)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, DIM))
        self.dec_pos = nn.Parameter(torch.randn(1, N_PATCH, DIM) * 0.02)
        dec_layer = nn.TransformerEncoderLayer(DIM, 4, DIM * 2, dropout=0.0, batch_first=True, norm_first=True)
        self.decoder = nn.TransformerEncoder(dec_layer, 1)
        self.pred = nn.Linear(DIM, pd)

    def random_masking(self, x):
        b, n, d = x.shape
        keep = int(n * (1 - MASK_RATIO))
        noise = torch.rand(b, n)
        ids_shuffle = noise.argsort(1)
        ids_restore = ids_shuffle.argsort(1)
        ids_keep = ids_shuffle[:, :keep]
        x_vis = torch.gather(x, 1, ids_keep[..., None].expand(-1, -1, d))
        mask = torch.ones(b, n)
        mask[:, :keep] = 0
        mask = torch.gather(mask, 1, ids_restore)
        return x_vis, mask, ids_restore

    def forward(self, imgs):
        x = self.embed(patchify(imgs)) + self.pos
        x_vis, mask, ids_restore = self.random_masking(x)
        lat = self.encoder(x_vis)
        y = self.dec_embed(lat)
        b, keep, d = y.shape
        y = torch.cat([y, self.mask_token.expand(b, N_PATCH - keep, d)], 1)
        y = torch.gather(y, 1, ids_restore[..., None].expand(-1, -1, d)) + self.dec_pos
        return self.pred(self.decoder(y)), mask

    def training_step(self, batch, batch_idx):
        (imgs,) = batch
        pred, mask = self(imgs)
        target = patchify(imgs)
        mean, var = target.mean(-1, keepdim=True), target.var(-1, keepdim=True)
        target = (target - mean) / (var + 1e-6).sqrt()
        per_patch = (pred - target).pow(2).mean(-1)
        loss = (per_patch * mask).sum() / mask.sum()
        if self.global_step % 15 == 0:
            lr = self.trainer.optimizers[0].param_groups[0]["lr"]
            print(f"step {self.global_step:3d} masked_loss {loss.item():.4f} lr {lr:.6f}")
        return loss

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, betas=(0.9, 0.95), weight_decay=0.05)
        w, t = self.hparams.warmup, self.hparams.total

        def lr_lambda(step):
            if step < w:
                return step / w
            return 0.5 * (1 + math.cos(math.pi * (step - w) / max(1, t - w)))

        sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def main():
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, IMG), torch.linspace(-1, 1, IMG), indexing="ij")
    n = 2048
    fx, fy = torch.rand(n, 1, 1) * 3 + 1, torch.rand(n, 1, 1) * 3 + 1
    base = torch.sin(fx * xx * 3) * torch.cos(fy * yy * 3)
    colors = torch.rand(n, 3, 1, 1)
    imgs = base[:, None] * colors + 0.05 * torch.randn(n, 3, IMG, IMG)
    dl = DataLoader(TensorDataset(imgs), batch_size=32, shuffle=True)
    model = TinyMAE()
    trainer = pl.Trainer(
        max_steps=60,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, dl)


if __name__ == "__main__":
    main()

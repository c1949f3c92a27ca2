"""CenterNet-style object-centre heatmap detector trained from scratch with Lightning.

The model factory follows the detection-model convention of always building the
backbone with FrozenBatchNorm2d ("BN is frozen because batches are small"). That is
only sensible when pretrained weights (with meaningful running stats and affine
params) are loaded. Here pretrained=False, so every FrozenBatchNorm2d holds fixed
buffers weight=1, bias=0, running_mean=0, running_var=1: normalisation is silently
disabled and the BN affine parameters are not trainable. Training runs, the loss
falls, but slower/worse than with ordinary BatchNorm2d.

Source: https://github.com/pytorch/vision/pull/5443
"""

import lightning.pytorch as pl
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
torch.set_num_threads(2)


class FrozenBatchNorm2d(nn.Module):
    def __init__(self, num_features, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", torch.ones(num_features))
        self.register_buffer("bias", torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def forward(self, x):
        scale = self.weight * (self.running_var + self.eps).rsqrt()
        bias = self.bias - self.running_mean * scale
        return x * scale[None, :, None, None] + bias[None, :, None, None]


def conv_block(cin, cout, stride, norm_layer):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), norm_layer(cout), nn.ReLU(inplace=True))


class Backbone(nn.Module):
    def __init__(self, norm_layer):
        super().__init__()
        self.stages = nn.Sequential(
            conv_block(3, 8, 1, norm_layer),
            conv_block(8, 16, 2, norm_layer),
            conv_block(16, 16, 1, norm_layer),
            conv_block(16, 24, 1, norm_layer),
            conv_block(24, 24, 1, norm_layer),
        )

    def forward(self, x):
        return self.stages(x)


def build_backbone(pretrained=False):
    norm_layer = FrozenBatchNorm2d  # BUG-LINE
    backbone = Backbone(norm_layer)
    if pretrained:
        raise RuntimeError("no weights available offline")
    return backbone


class CenterHeatmapDataset(Dataset):
    def __init__(self, n, size=24, stride=2, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.imgs = torch.randn(n, 3, size, size, generator=g) * 0.5 + 1.5
        hs = size // stride
        self.heat = torch.zeros(n, 1, hs, hs)
        yy, xx = torch.meshgrid(torch.arange(hs).float(), torch.arange(hs).float(), indexing="ij")
        for i in range(n):
            for _ in range(2):
                w = int(torch.randint(4, 8, (1,), generator=g))
                x0 = int(torch.randint(0, size - w, (1,), generator=g))
                y0 = int(torch.randint(0, size - w, (1,), generator=g))
                self.imgs[i, :, y0 : y0 + w, x0 : x0 + w] += 2.5
                cx, cy = (x0 + w / 2) / stride, (y0 + w / 2) / stride
                blob = torch.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * 1.0**2))
                self.heat[i, 0] = torch.maximum(self.heat[i, 0], blob)

    def __len__(self):
        return len(self.imgs)

    def __getitem__(self, i):
        return self.imgs[i], self.heat[i]


def focal_heatmap_loss(logits, gt, alpha=2, beta=4):
    pred = torch.sigmoid(logits).clamp(1e-4, 1 - 1e-4)
    pos = gt.ge(0.95).float()
    neg = 1 - pos
    pos_loss = torch.log(pred) * (1 - pred) ** alpha * pos
    neg_loss = torch.log(1 - pred) * pred**alpha * (1 - gt) ** beta * neg
    num_pos = pos.sum().clamp(min=1)
    return -(pos_loss.sum() + neg_loss.sum()) / num_pos


class CenterNetLite(pl.LightningModule):
    def __init__(self, lr=2e-3):
        super().__init__()
        self.save_hyperparameters()
        self.backbone = build_backbone(pretrained=False)
        self.head = nn.Sequential(nn.Conv2d(24, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 1, 1))
        nn.init.constant_(self.head[-1].bias, -2.19)

    def forward(self, x):
        return self.head(self.backbone(x))

    def training_step(self, batch, batch_idx):
        imgs, heat = batch
        loss = focal_heatmap_loss(self(imgs), heat)
        if self.global_step % 15 == 0:
            print(f"step {self.global_step:3d} loss {loss.item():.4f}")
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


def main():
    ds = CenterHeatmapDataset(256)
    dl = DataLoader(ds, batch_size=24, shuffle=True)
    model = CenterNetLite()
    trainer = pl.Trainer(
        max_steps=90,
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

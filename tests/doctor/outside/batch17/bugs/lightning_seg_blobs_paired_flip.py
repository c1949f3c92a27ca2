"""Tiny fully-convolutional segmenter (Lightning) on synthetic images with one bright blob.

Each sample is a 1x16x16 noisy image with a bright rectangle placed in the left half and
a binary mask of that rectangle. The dataset applies a random horizontal flip as
augmentation.

Bug: the image and the mask are flipped with two independent coin tosses, so about half
of the training pairs have the mask mirrored relative to the image. Nothing errors, the
loss falls a bit (the net learns a blurred, symmetric guess), but the supervision is
wrong. The report asks why separately applied random spatial transforms to image and
mask give mismatched pairs; the fix is to draw the random parameters once and apply the
same transform to both.

Source: https://github.com/albumentations-team/albumentations/issues/397
"""

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
torch.set_num_threads(2)

S = 16


class BlobSeg(Dataset):
    def __init__(self, n, seed, augment=True):
        self.augment = augment
        g = torch.Generator().manual_seed(seed)
        self.items = []
        for _ in range(n):
            h, w = torch.randint(3, 7, (2,), generator=g).tolist()
            r = torch.randint(0, S - h, (1,), generator=g).item()
            c = torch.randint(0, S // 2 - w + 1, (1,), generator=g).item()
            mask = torch.zeros(1, S, S)
            mask[:, r : r + h, c : c + w] = 1.0
            img = mask * 1.5 + 0.5 * torch.randn(1, S, S, generator=g)
            self.items.append((img, mask))
        self.g = torch.Generator().manual_seed(seed + 1)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        img, mask = self.items[i]
        if not self.augment:
            return img, mask
        if torch.rand((), generator=self.g) < 0.5:
            img = img.flip(-1)
        if torch.rand((), generator=self.g) < 0.5:
            mask = mask.flip(-1)  # BUG-LINE
        return img, mask


class Segmenter(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 1, 1)
        )

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        img, mask = batch
        loss = F.binary_cross_entropy_with_logits(self(img), mask)
        if self.global_step % 20 == 0:
            print(f"step {self.global_step:3d}  train bce {loss.item():.4f}")
        return loss

    def validation_step(self, batch, batch_idx):
        img, mask = batch
        pred = (self(img) > 0).float()
        inter = (pred * mask).sum()
        union = ((pred + mask) > 0).float().sum()
        self.log("val_iou", inter / union.clamp_min(1.0), prog_bar=False)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=3e-3)


train_dl = DataLoader(BlobSeg(256, 1), batch_size=32, shuffle=True)
val_dl = DataLoader(BlobSeg(64, 2, augment=False), batch_size=64)

trainer = pl.Trainer(
    max_epochs=10,
    accelerator="cpu",
    devices=1,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    num_sanity_val_steps=0,
)
model = Segmenter()
trainer.fit(model, train_dl, val_dl)
print("final val IoU", float(trainer.callback_metrics["val_iou"]))

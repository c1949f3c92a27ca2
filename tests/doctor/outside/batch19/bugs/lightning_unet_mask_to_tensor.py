"""Binary foreground segmentation with a tiny U-Net style network in PyTorch Lightning.

The dataset applies the same "to tensor" helper to the image and to the uint8 mask. That helper
(like albumentations' / torchvision's ToTensor) converts uint8 arrays to float and divides by
255. The mask values {0, 1} therefore become {0, 1/255}, and the subsequent .long() cast turns
every foreground pixel into class 0. The network only ever sees background targets: the loss
drops to ~0 quickly and pixel accuracy looks excellent, while nothing is segmented.

Source: https://github.com/albumentations-team/albumentations/issues/148
"""

import warnings

import lightning.pytorch as pl
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

warnings.filterwarnings("ignore")
torch.manual_seed(0)
torch.set_num_threads(2)


def to_tensor(arr):
    """HWC uint8 / float array -> CHW float tensor (uint8 is scaled to [0, 1])."""
    t = torch.from_numpy(np.ascontiguousarray(arr))
    if t.ndim == 2:
        t = t[None]
    else:
        t = t.permute(2, 0, 1)
    if t.dtype == torch.uint8:
        return t.float().div(255.0)
    return t.float()


class BlobDataset(Dataset):
    def __init__(self, n=160, size=32, seed=0):
        rng = np.random.default_rng(seed)
        self.images, self.masks = [], []
        yy, xx = np.mgrid[:size, :size]
        for _ in range(n):
            cy, cx = rng.integers(8, size - 8, 2)
            r = rng.integers(4, 9)
            mask = (((yy - cy) ** 2 + (xx - cx) ** 2) < r * r).astype(np.uint8)
            img = rng.integers(0, 80, (size, size, 3)).astype(np.uint8)
            img[mask == 1] += np.array([120, 60, 20], dtype=np.uint8)
            self.images.append(img)
            self.masks.append(mask)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        image = to_tensor(self.images[i])
        mask = to_tensor(self.masks[i]).squeeze(0).long()  # BUG-LINE
        return image, mask


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class TinyUNet(pl.LightningModule):
    def __init__(self, lr=3e-3):
        super().__init__()
        self.save_hyperparameters()
        self.enc1, self.enc2 = block(3, 16), block(16, 32)
        self.dec1 = block(32 + 16, 16)
        self.out = nn.Conv2d(16, 2, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        d1 = F.interpolate(e2, scale_factor=2, mode="nearest")
        return self.out(self.dec1(torch.cat([d1, e1], dim=1)))

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(1) == y).float().mean()
        if self.global_step % 10 == 0:
            print(f"step {self.global_step:3d} loss {loss.item():.4f} pixel-acc {acc.item():.3f}")
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


def main():
    ds = BlobDataset()
    dl = DataLoader(ds, batch_size=16, shuffle=True)
    model = TinyUNet()
    trainer = pl.Trainer(
        max_epochs=4,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
    )
    trainer.fit(model, dl)
    x = torch.stack([to_tensor(im) for im in ds.images[:32]])
    gt = torch.from_numpy(np.stack(ds.masks[:32])).long()
    with torch.no_grad():
        pred = model(x).argmax(1)
    inter = ((pred == 1) & (gt == 1)).sum().item()
    union = ((pred == 1) | (gt == 1)).sum().item()
    print(f"foreground IoU on raw masks: {inter / max(union, 1):.3f}")


if __name__ == "__main__":
    main()

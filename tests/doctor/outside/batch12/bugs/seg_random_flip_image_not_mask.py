"""Trains a small encoder-decoder network for binary foreground segmentation of synthetic images
(one bright, deliberately off-centre ellipse per image on a textured background). The training
dataset applies a random horizontal flip for augmentation, but the flip is applied to the image
only and not to its mask, so for about half of the samples the target mask is the mirror image of
what is shown. Nothing errors or warns; the network learns a blurred compromise between the
object and its mirror position, and held-out IoU is far lower than with consistent
augmentation.

Source: https://github.com/Project-MONAI/MONAI/issues/1464
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)

S = 24


def make_sample(g):
    yy, xx = torch.meshgrid(torch.arange(S).float(), torch.arange(S).float(), indexing="ij")
    cx = (
        float(torch.randint(3, 9, (1,), generator=g))
        if torch.rand(1, generator=g) < 0.5
        else float(torch.randint(15, 21, (1,), generator=g))
    )
    cy = float(torch.randint(4, 20, (1,), generator=g))
    a, b = [float(v) for v in torch.randint(2, 5, (2,), generator=g)]
    mask = (((xx - cx) / a) ** 2 + ((yy - cy) / b) ** 2 <= 1).float()
    img = 0.4 * torch.randn(1, S, S, generator=g) + 1.2 * mask
    return img, mask[None]


class SegDataset(Dataset):
    def __init__(self, n, augment, seed):
        g = torch.Generator().manual_seed(seed)
        self.items = [make_sample(g) for _ in range(n)]
        self.augment = augment

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        img, mask = self.items[i]
        if self.augment and torch.rand(1) < 0.5:
            img = torch.flip(img, dims=[-1])  # BUG-LINE
        return img, mask


class TinyUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU())
        self.enc2 = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU())
        self.up = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.dec = nn.Sequential(nn.Conv2d(32, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 1, 1))

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(e1)
        return self.dec(torch.cat([self.up(e2), e1], 1))


train = DataLoader(SegDataset(512, augment=True, seed=1), batch_size=16, shuffle=True)
model = TinyUNet()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
step = 0
for epoch in range(3):
    for img, mask in train:
        loss = F.binary_cross_entropy_with_logits(model(img), mask)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 30 == 0:
            print(f"step {step} loss {loss.item():.4f}")
        step += 1

test = SegDataset(200, augment=False, seed=2)
with torch.no_grad():
    img = torch.stack([t[0] for t in test.items])
    mask = torch.stack([t[1] for t in test.items])
    pred = (model(img) > 0).float()
    iou = ((pred * mask).sum() / ((pred + mask) > 0).float().sum()).item()
print(f"held-out foreground IoU {iou:.3f}")

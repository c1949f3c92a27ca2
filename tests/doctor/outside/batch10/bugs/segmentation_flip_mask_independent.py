"""Trains a tiny fully-convolutional segmentation network on synthetic images that contain a bright square
in the left half, with a pixel mask of the square as target. The Dataset applies random horizontal flips as
augmentation, but draws the flip decision for the image and for the mask separately, so in half of the
samples the mask points at the mirrored location of the object. Shapes still match and training runs
normally; the network is just trained against labels that are misaligned with the input half of the time,
which caps the achievable IoU.
Source: https://github.com/albumentations-team/albumentations/issues/1056
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
torch.set_num_threads(2)


class SquareSeg(Dataset):
    def __init__(self, n=256, size=24):
        g = torch.Generator().manual_seed(1)
        self.imgs, self.masks = [], []
        for _ in range(n):
            img = torch.randn(1, size, size, generator=g) * 0.3
            mask = torch.zeros(1, size, size)
            r = int(torch.randint(0, size - 8, (1,), generator=g))
            c = int(torch.randint(0, size // 2 - 6, (1,), generator=g))
            img[:, r : r + 7, c : c + 6] += 1.0
            mask[:, r : r + 7, c : c + 6] = 1.0
            self.imgs.append(img)
            self.masks.append(mask)

    def __len__(self):
        return len(self.imgs)

    def __getitem__(self, i):
        img, mask = self.imgs[i], self.masks[i]
        flip_img = torch.rand(1).item() < 0.5
        flip_mask = torch.rand(1).item() < 0.5  # BUG-LINE
        if flip_img:
            img = img.flip(-1)
        if flip_mask:
            mask = mask.flip(-1)
        return img, mask


net = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1),
    nn.ReLU(),
    nn.Conv2d(16, 16, 3, padding=1),
    nn.ReLU(),
    nn.Conv2d(16, 1, 1),
)
loader = DataLoader(SquareSeg(), batch_size=32, shuffle=True)
opt = torch.optim.Adam(net.parameters(), lr=3e-3)
step = 0
for epoch in range(4):
    for img, mask in loader:
        logits = net(img)
        loss = F.binary_cross_entropy_with_logits(logits, mask)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
    print(f"epoch {epoch} step {step} loss {loss.item():.4f}")

ds = SquareSeg()
x = torch.stack(ds.imgs[:64])
m = torch.stack(ds.masks[:64])
with torch.no_grad():
    pred = (net(x) > 0).float()
iou = (pred * m).sum() / ((pred + m) > 0).float().sum().clamp(min=1)
print("IoU on un-augmented samples:", round(iou.item(), 4))

"""A segmentation dataset draws a separate random decision for the image flip and for the mask flip, so about
half of the training pairs show a mirrored image with an unmirrored mask. Training runs, the labels are just
wrong for those pixels.

Source: https://github.com/bigmb/Unet-Segmentation-Pytorch-Nest-of-Unets/pull/30
"""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)


class Shapes(Dataset):
    def __init__(self, n=64):
        self.imgs = torch.rand(n, 1, 16, 16)
        self.masks = (self.imgs[:, 0] > 0.5).long()
        self.imgs[:, :, :, :8] += 0.5  # asymmetric content, so a flip matters

    def __len__(self):
        return len(self.imgs)

    def __getitem__(self, i):
        img, mask = self.imgs[i], self.masks[i]
        if torch.rand(1) < 0.5:
            img = torch.flip(img, dims=[-1])
        if torch.rand(1) < 0.5:  # BUG-LINE
            mask = torch.flip(mask, dims=[-1])
        return img, mask


net = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 2, 3, padding=1))
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
for img, mask in DataLoader(Shapes(), batch_size=8, shuffle=True):
    loss = F.cross_entropy(net(img), mask)
    opt.zero_grad()
    loss.backward()
    opt.step()

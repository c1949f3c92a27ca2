"""Tiny fully-convolutional binary segmentation head (drivable-area / lane mask) trained with BCE.

Source: https://github.com/hustvl/YOLOP/issues/117

Bug: the segmentation head already ends in `torch.sigmoid`, and the criterion is
`nn.BCEWithLogitsLoss`, which applies a sigmoid again internally. The loss therefore sees
sigmoid(sigmoid(z)) in (0.5, 0.73): background pixels can never get a probability below 0.5 and
the loss cannot go below ~0.3 for them, while gradients are squashed by two sigmoids. Training
runs and the loss decreases a little, but the predicted masks are poor. Fix: return raw logits
from the head (or use `nn.BCELoss` with the sigmoid output).
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

S = 32


def make_scenes(n, gen):
    imgs = 0.3 * torch.randn(n, 3, S, S, generator=gen)
    masks = torch.zeros(n, 1, S, S)
    yy, xx = torch.meshgrid(torch.arange(S), torch.arange(S), indexing="ij")
    for i in range(n):
        # a slanted "lane" stripe
        slope = (torch.rand(1, generator=gen).item() - 0.5) * 1.2
        off = torch.randint(8, 24, (1,), generator=gen).item()
        width = torch.randint(2, 5, (1,), generator=gen).item()
        m = ((xx - (off + slope * (yy - S / 2))).abs() < width).float()
        masks[i, 0] = m
        imgs[i] += m * torch.tensor([0.9, 0.6, -0.2])[:, None, None]
    return imgs, masks


class SegHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1, stride=2), nn.ReLU()
        )
        self.dec = nn.Sequential(nn.ConvTranspose2d(16, 16, 2, stride=2), nn.ReLU(), nn.Conv2d(16, 1, 3, padding=1))

    def forward(self, x):
        return torch.sigmoid(self.dec(self.enc(x)))  # BUG-LINE


def iou(prob, mask):
    pred = prob > 0.5
    inter = (pred & (mask > 0.5)).sum().item()
    union = (pred | (mask > 0.5)).sum().item()
    return inter / max(union, 1)


def main():
    gen = torch.Generator().manual_seed(0)
    x, m = make_scenes(192, gen)
    model = SegHead()
    criterion = nn.BCEWithLogitsLoss()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    bs = 32
    for epoch in range(5):
        perm = torch.randperm(len(x))
        tot = 0.0
        for i in range(0, len(x), bs):
            idx = perm[i : i + bs]
            out = model(x[idx])
            loss = criterion(out, m[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item() * len(idx)
        with torch.no_grad():
            print(f"epoch {epoch} bce {tot / len(x):.4f} mask_iou {iou(model(x), m):.3f}")


if __name__ == "__main__":
    main()

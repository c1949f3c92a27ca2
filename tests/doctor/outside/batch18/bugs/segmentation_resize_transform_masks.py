"""Small encoder-decoder for 4-class semantic segmentation on synthetic scenes.

The paired transform resizes the image and the label map to the training resolution
with the same call, F.interpolate(..., mode="bilinear"), then rounds the mask back to
integers. Class ids are categorical, so bilinear interpolation invents labels that do
not exist at object borders (a 0|2 border becomes a ring of class 1, a 0|3 border
becomes 1s and 2s). The network is trained on these fabricated boundary classes; the
loss and the (equally corrupted) validation IoU look normal. Label maps must be
resized with mode="nearest".

Source: https://discuss.pytorch.org/t/resizing-semantic-segmentation-labels/143246/2
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
torch.set_num_threads(2)

NUM_CLASSES = 4
SRC, DST = 48, 32


def render_scene(g):
    img = torch.randn(3, SRC, SRC, generator=g) * 0.2
    mask = torch.zeros(SRC, SRC, dtype=torch.long)
    yy, xx = torch.meshgrid(torch.arange(SRC), torch.arange(SRC), indexing="ij")
    # class 1: a horizontal band ("road")
    y0 = int(torch.randint(30, 40, (1,), generator=g))
    band = (yy >= y0) & (yy < y0 + 6)
    mask[band] = 1
    # class 2: squares, class 3: discs
    for cls in (2, 3):
        cx, cy = [int(v) for v in torch.randint(8, SRC - 8, (2,), generator=g)]
        r = int(torch.randint(4, 8, (1,), generator=g))
        if cls == 2:
            region = ((xx - cx).abs() <= r) & ((yy - cy).abs() <= r)
        else:
            region = (xx - cx) ** 2 + (yy - cy) ** 2 <= r * r
        mask[region] = cls
    palette = torch.tensor([[0.0, 0.0, 0.0], [0.8, 0.8, 0.0], [0.0, 0.9, 0.2], [0.9, 0.1, 0.6]])
    img += palette[mask].permute(2, 0, 1)
    return img, mask


class ResizePair:
    def __init__(self, size):
        self.size = size

    def __call__(self, img, mask):
        img = F.interpolate(img[None], size=(self.size, self.size), mode="bilinear", align_corners=False)[0]
        mask = F.interpolate(mask[None, None].float(), size=(self.size, self.size), mode="bilinear", align_corners=False)[0, 0]  # BUG-LINE  # fmt: skip
        return img, mask.round().long()


class SceneDataset(Dataset):
    def __init__(self, n, seed, transform):
        g = torch.Generator().manual_seed(seed)
        self.items = [render_scene(g) for _ in range(n)]
        self.transform = transform

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.transform(*self.items[i])


class TinySegNet(nn.Module):
    def __init__(self, c=NUM_CLASSES):
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.enc2 = nn.Sequential(nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU())
        self.dec = nn.Sequential(nn.ConvTranspose2d(32, 16, 2, stride=2), nn.BatchNorm2d(16), nn.ReLU())
        self.out = nn.Conv2d(32, c, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        d = self.dec(self.enc2(e1))
        return self.out(torch.cat([d, e1], 1))


def miou(pred, target, c=NUM_CLASSES):
    ious = []
    for k in range(c):
        inter = ((pred == k) & (target == k)).sum().item()
        union = ((pred == k) | (target == k)).sum().item()
        if union > 0:
            ious.append(inter / union)
    return sum(ious) / len(ious)


def main():
    tf = ResizePair(DST)
    train = DataLoader(SceneDataset(240, 1, tf), batch_size=16, shuffle=True)
    val = DataLoader(SceneDataset(64, 2, tf), batch_size=64)
    model = TinySegNet()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    for epoch in range(4):
        model.train()
        for img, mask in train:
            loss = F.cross_entropy(model(img), mask)
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            img, mask = next(iter(val))
            score = miou(model(img).argmax(1), mask)
        print(f"epoch {epoch} loss {loss.item():.4f} val_mIoU {score:.3f}")


if __name__ == "__main__":
    main()

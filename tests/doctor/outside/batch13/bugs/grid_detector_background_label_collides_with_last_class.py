"""Grid (single-shot, per-cell) object detector classification branch with a "no object" class.

Source: https://github.com/YuqingWang1029/VisTR/issues/11

Bug: the dataset's category ids run from 1 to NUM_CLASSES (as in YouTube-VIS / COCO-style
annotations, 0 unused), and the classifier has NUM_CLASSES + 1 outputs. Cells without an object
are filled with the "no object" label `NUM_CLASSES` - which is also the id of the last real
category. Objects of that category are therefore trained as background (and background is trained
as that category); output 0 is never used. The loss decreases normally and nothing fails, but the
last class can never be detected separately from background. Fix: either shift the category ids
to 0..NUM_CLASSES-1 or use NUM_CLASSES + 1 outputs with the no-object label at an unused index.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

NUM_CLASSES = 4  # category ids 1..4
G = 4  # grid cells per side
CELL = 6
S = G * CELL


def make_images(n, gen):
    imgs = 0.2 * torch.randn(n, 3, S, S, generator=gen)
    objs = []  # list of (cell_row, cell_col, category_id)
    palette = torch.tensor([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0], [1.0, 1.0, 0]])
    for i in range(n):
        cells = torch.randperm(G * G, generator=gen)[:3].tolist()
        o = []
        for cidx in cells:
            r, c = divmod(cidx, G)
            cat = int(torch.randint(1, NUM_CLASSES + 1, (1,), generator=gen))
            imgs[i, :, r * CELL + 1 : r * CELL + 5, c * CELL + 1 : c * CELL + 5] += palette[cat - 1][:, None, None]
            o.append((r, c, cat))
        objs.append(o)
    return imgs, objs


def build_targets(objs):
    target = torch.full((len(objs), G, G), NUM_CLASSES, dtype=torch.long)  # BUG-LINE
    for i, o in enumerate(objs):
        for r, c, cat in o:
            target[i, r, c] = cat
    return target


class GridDetector(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(16, 32, CELL, stride=CELL),
            nn.ReLU(),
        )
        self.cls = nn.Conv2d(32, NUM_CLASSES + 1, 1)

    def forward(self, x):
        return self.cls(self.backbone(x))  # (B, NUM_CLASSES + 1, G, G)


def main():
    gen = torch.Generator().manual_seed(0)
    imgs, objs = make_images(256, gen)
    targets = build_targets(objs)
    model = GridDetector()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    bs = 32
    for epoch in range(5):
        perm = torch.randperm(len(imgs))
        tot = 0.0
        for i in range(0, len(imgs), bs):
            idx = perm[i : i + bs]
            loss = F.cross_entropy(model(imgs[idx]), targets[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item() * len(idx)
        print(f"epoch {epoch} cls_loss {tot / len(imgs):.4f}")


if __name__ == "__main__":
    main()

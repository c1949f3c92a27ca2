"""Single-object box regressor (DETR-style head) trained with L1 + generalized-IoU loss.

Source: https://github.com/stevebottos/owl-vit-object-detection/issues/14

Bug: the head predicts boxes as (cx, cy, w, h) and the targets are stored in the same format, but
`generalized_box_iou()` expects corner format (x1, y1, x2, y2). The boxes are passed in without
`box_cxcywh_to_xyxy`, so the GIoU term is computed on meaningless "boxes" (w and h are read as
the bottom-right corner). Its gradient pushes the predictions in wrong directions, fighting the L1
term; the total loss still decreases, so nothing looks broken, but the localisation quality
(real IoU) ends up clearly worse. Fix: convert both boxes with `box_cxcywh_to_xyxy` first.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

S = 32


def box_cxcywh_to_xyxy(b):
    cx, cy, w, h = b.unbind(-1)
    return torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], -1)


def generalized_box_iou(a, b):
    # a, b: (N, 4) in xyxy; returns elementwise GIoU
    area_a = (a[:, 2] - a[:, 0]).clamp(min=0) * (a[:, 3] - a[:, 1]).clamp(min=0)
    area_b = (b[:, 2] - b[:, 0]).clamp(min=0) * (b[:, 3] - b[:, 1]).clamp(min=0)
    lt = torch.max(a[:, :2], b[:, :2])
    rb = torch.min(a[:, 2:], b[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, 0] * wh[:, 1]
    union = area_a + area_b - inter
    iou = inter / (union + 1e-7)
    lt_c = torch.min(a[:, :2], b[:, :2])
    rb_c = torch.max(a[:, 2:], b[:, 2:])
    wh_c = (rb_c - lt_c).clamp(min=0)
    area_c = wh_c[:, 0] * wh_c[:, 1]
    return iou - (area_c - union) / (area_c + 1e-7)


def make_data(n, gen):
    imgs = 0.2 * torch.randn(n, 1, S, S, generator=gen)
    boxes = torch.zeros(n, 4)
    for i in range(n):
        w, h = torch.randint(6, 16, (2,), generator=gen).tolist()
        x1 = int(torch.randint(0, S - w, (1,), generator=gen))
        y1 = int(torch.randint(0, S - h, (1,), generator=gen))
        imgs[i, 0, y1 : y1 + h, x1 : x1 + w] += 1.0
        boxes[i] = torch.tensor([(x1 + w / 2) / S, (y1 + h / 2) / S, w / S, h / S])
    return imgs, boxes


class BoxNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(16 * 8 * 8, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, x):
        return self.head(self.f(x)).sigmoid()  # (cx, cy, w, h) in [0, 1]


def main():
    gen = torch.Generator().manual_seed(0)
    x, y = make_data(256, gen)
    model = BoxNet()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    bs = 32
    for epoch in range(6):
        perm = torch.randperm(len(x))
        for i in range(0, len(x), bs):
            idx = perm[i : i + bs]
            pred = model(x[idx])
            l1 = F.l1_loss(pred, y[idx])
            giou = generalized_box_iou(pred, y[idx])  # BUG-LINE
            loss = 5 * l1 + 2 * (1 - giou).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            p = model(x)
            real = generalized_box_iou(box_cxcywh_to_xyxy(p), box_cxcywh_to_xyxy(y)).mean().item()
        print(f"epoch {epoch} loss {loss.item():.4f} l1 {l1.item():.4f} true_giou {real:.3f}")


if __name__ == "__main__":
    main()

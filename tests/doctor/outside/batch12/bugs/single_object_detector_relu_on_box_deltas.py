"""Trains a tiny anchor-based single-object detector on synthetic 32x32 images that contain one
bright rectangle of one of three classes (class = brightness pattern). The head predicts class
logits and four box-regression deltas (dx, dy, log dw, log dh) relative to one fixed central
anchor, trained with smooth-L1 against the encoded ground-truth deltas. The regression branch ends
in a ReLU, copied from the hidden layers, so it can only output values >= 0, while about half of
all encoded deltas are negative (objects left of / above the anchor, or smaller than it). Those
targets are unreachable, gradients through the clamped outputs are zero, and box error plateaus;
training runs normally with no error or warning.

Source: https://github.com/tsinghua-rll/VoxelNet-tensorflow/issues/10
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)

S = 32
ANCHOR = torch.tensor([16.0, 16.0, 12.0, 12.0])  # cx, cy, w, h


def make_batch(n):
    imgs = 0.2 * torch.randn(n, 1, S, S)
    boxes = torch.zeros(n, 4)
    labels = torch.randint(0, 3, (n,))
    for i in range(n):
        w, h = [int(v) for v in torch.randint(6, 20, (2,))]
        x0 = int(torch.randint(0, S - w, (1,)))
        y0 = int(torch.randint(0, S - h, (1,)))
        val = [1.0, 2.0, -1.5][int(labels[i])]
        imgs[i, 0, y0 : y0 + h, x0 : x0 + w] += val
        boxes[i] = torch.tensor([x0 + w / 2, y0 + h / 2, float(w), float(h)])
    return imgs, boxes, labels


def encode(boxes):
    dxy = (boxes[:, :2] - ANCHOR[:2]) / ANCHOR[2:]
    dwh = torch.log(boxes[:, 2:] / ANCHOR[2:])
    return torch.cat([dxy, dwh], 1)


class TinyDetector(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 32, 3, padding=1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(32 * 8 * 8, 128),
            nn.ReLU(),
        )
        self.cls_head = nn.Linear(128, 3)
        self.box_head = nn.Sequential(nn.Linear(128, 4), nn.ReLU())  # BUG-LINE

    def forward(self, x):
        f = self.backbone(x)
        return self.cls_head(f), self.box_head(f)


model = TinyDetector()
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
for step in range(60):
    imgs, boxes, labels = make_batch(32)
    cls_logits, deltas = model(imgs)
    targets = encode(boxes)
    loss = F.cross_entropy(cls_logits, labels) + F.smooth_l1_loss(deltas, targets, beta=0.1)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step} loss {loss.item():.4f}  negative targets {(targets < 0).float().mean():.2f}")

with torch.no_grad():
    imgs, boxes, labels = make_batch(256)
    cls_logits, deltas = model(imgs)
    err = (deltas - encode(boxes)).abs().mean().item()
    acc = (cls_logits.argmax(1) == labels).float().mean().item()
print(f"held-out mean |delta error| {err:.3f}  class accuracy {acc:.3f}")

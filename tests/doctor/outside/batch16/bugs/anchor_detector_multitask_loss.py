"""Toy 1-D anchor-based detector: classification + box-offset regression per anchor.

Anchors are labelled 1 (positive, IoU >= 0.5), 0 (negative, IoU < 0.4) or -1
(ignored, in between). Regression targets are computed for EVERY anchor against
its best-matching ground-truth box, which is meaningless for negatives.

Bug: the smooth-L1 box loss is masked with `labels >= 0` (anchors that are not
ignored) instead of `labels == 1`, so the many negative anchors regress towards
arbitrary boxes they do not overlap. The regression head is pulled towards the
average offset of background anchors and box quality on positives stays poor,
with no error. The faster-rcnn.pytorch thread explains that the box loss must
be applied to foreground (label == 1) anchors only, via bbox_inside_weights.

Source: https://github.com/jwyang/faster-rcnn.pytorch/issues/780
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

L = 64
CENTERS = torch.arange(2, L, 4).float()
WIDTHS = torch.tensor([4.0, 8.0, 16.0])
ANCH = torch.stack(torch.meshgrid(CENTERS, WIDTHS, indexing="ij"), -1).view(-1, 2)
A = ANCH.shape[0]


def iou_1d(a, b):  # a (A,2) b (G,2) as (center, width)
    lo = torch.max(a[:, None, 0] - a[:, None, 1] / 2, b[None, :, 0] - b[None, :, 1] / 2)
    hi = torch.min(a[:, None, 0] + a[:, None, 1] / 2, b[None, :, 0] + b[None, :, 1] / 2)
    inter = (hi - lo).clamp(min=0)
    return inter / (a[:, None, 1] + b[None, :, 1] - inter)


def make_sample():
    g = torch.stack([torch.rand(2) * (L - 16) + 8, torch.rand(2) * 10 + 4], 1)
    x = torch.zeros(L)
    for c, w in g:
        x[int(c - w / 2) : int(c + w / 2)] = 1.0
    iou = iou_1d(ANCH, g)
    best, idx = iou.max(1)
    labels = torch.full((A,), -1.0)
    labels[best < 0.4] = 0.0
    labels[best >= 0.5] = 1.0
    m = g[idx]
    tgt = torch.stack([(m[:, 0] - ANCH[:, 0]) / ANCH[:, 1], torch.log(m[:, 1] / ANCH[:, 1])], 1)
    return x + 0.1 * torch.randn(L), labels, tgt


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv1d(1, 16, 5, padding=2), nn.ReLU(), nn.Conv1d(16, 16, 5, padding=2), nn.ReLU())
        self.fc = nn.Linear(16 * L, A * 3)

    def forward(self, x):
        out = self.fc(self.body(x.unsqueeze(1)).flatten(1)).view(-1, A, 3)
        return out[..., 0], out[..., 1:]


data = [make_sample() for _ in range(256)]
model = Head()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(70):
    batch = [data[i] for i in torch.randint(0, 256, (32,)).tolist()]
    x, labels, tgt = (torch.stack(t) for t in zip(*batch))
    cls, reg = model(x)
    valid = labels >= 0
    cls_loss = F.binary_cross_entropy_with_logits(cls[valid], labels[valid])
    reg_mask = labels >= 0  # BUG-LINE
    box_loss = F.smooth_l1_loss(reg[reg_mask], tgt[reg_mask])
    loss = cls_loss + box_loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0 or step == 69:
        print(f"step {step:3d} cls {cls_loss.item():.3f} box {box_loss.item():.3f}")

with torch.no_grad():
    x, labels, tgt = (torch.stack(t) for t in zip(*data[:64]))
    _, reg = model(x)
    pos = labels == 1
    print("box L1 error on positive anchors", (reg[pos] - tgt[pos]).abs().mean().item())

"""Toy 1-D RetinaNet-style head: sigmoid focal classification + smooth-L1 boxes.

Unusual but correct (several deliberate choices):
* anchors labelled -1 (IoU between thresholds) are IGNORED by the classification
  loss through a mask, negatives (0) and positives (1) both count;
* the box loss uses ONLY positive anchors (label == 1); regression targets of
  negatives are computed against an arbitrary GT box and must not be trained;
* both losses use reduction='sum' and are divided by hand by the number of
  positive anchors (clamped to >= 1), the RetinaNet normaliser, instead of a mean
  over all anchors.
The keras/tf-retinanet discussion confirms the regression loss is meant to use
positive anchors only while classification drops just the ignored ones.

Source: https://github.com/fizyr/tf-retinanet/issues/46
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

L = 64
ANCH = torch.stack(
    torch.meshgrid(torch.arange(2, L, 4).float(), torch.tensor([4.0, 8.0, 16.0]), indexing="ij"), -1
).view(-1, 2)
A = ANCH.shape[0]


def iou_1d(a, b):
    lo = torch.max(a[:, None, 0] - a[:, None, 1] / 2, b[None, :, 0] - b[None, :, 1] / 2)
    hi = torch.min(a[:, None, 0] + a[:, None, 1] / 2, b[None, :, 0] + b[None, :, 1] / 2)
    inter = (hi - lo).clamp(min=0)
    return inter / (a[:, None, 1] + b[None, :, 1] - inter)


def make_sample():
    g = torch.stack([torch.rand(2) * (L - 16) + 8, torch.rand(2) * 10 + 4], 1)
    x = torch.zeros(L)
    for c, w in g:
        x[int(c - w / 2) : int(c + w / 2)] = 1.0
    best, idx = iou_1d(ANCH, g).max(1)
    labels = torch.full((A,), -1.0)
    labels[best < 0.4] = 0.0
    labels[best >= 0.5] = 1.0
    m = g[idx]
    tgt = torch.stack([(m[:, 0] - ANCH[:, 0]) / ANCH[:, 1], torch.log(m[:, 1] / ANCH[:, 1])], 1)
    return x + 0.1 * torch.randn(L), labels, tgt


def sigmoid_focal(logits, targets, alpha=0.25, gamma=2.0):
    p = torch.sigmoid(logits)
    ce = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    a_t = alpha * targets + (1 - alpha) * (1 - targets)
    return a_t * (1 - p_t) ** gamma * ce


body = nn.Sequential(
    nn.Conv1d(1, 16, 5, padding=2),
    nn.ReLU(),
    nn.Conv1d(16, 16, 5, padding=2),
    nn.ReLU(),
    nn.Flatten(),
    nn.Linear(16 * L, A * 3),
)
cls_bias = -torch.log(torch.tensor((1 - 0.01) / 0.01))  # prior prob 0.01 init
with torch.no_grad():
    body[-1].bias.view(A, 3)[:, 0].fill_(cls_bias)
data = [make_sample() for _ in range(256)]
opt = torch.optim.Adam(body.parameters(), lr=1e-3)
for step in range(70):
    batch = [data[i] for i in torch.randint(0, 256, (32,)).tolist()]
    x, labels, tgt = (torch.stack(t) for t in zip(*batch))
    out = body(x.unsqueeze(1)).view(-1, A, 3)
    cls, reg = out[..., 0], out[..., 1:]
    keep = labels >= 0
    pos = labels == 1
    num_pos = pos.sum().clamp(min=1).float()
    cls_loss = sigmoid_focal(cls[keep], labels[keep]).sum() / num_pos
    box_loss = F.smooth_l1_loss(reg[pos], tgt[pos], reduction="sum") / num_pos
    loss = cls_loss + box_loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0 or step == 69:
        print(f"step {step:3d} focal {cls_loss.item():.3f} box {box_loss.item():.3f} pos {int(num_pos)}")

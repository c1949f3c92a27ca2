"""Trains a small single-object detector (class logits plus a box in normalised [0, 1]
cx, cy, w, h coordinates through a sigmoid) on synthetic RGB images of varying original size
(20 to 48 pixels square), each containing one coloured rectangle. The data pipeline resizes every
image to the 32x32 network input, but the ground-truth box, given in original-image pixels, is
not rescaled with it: it is normalised by the network input size instead of the original image
size. Box targets therefore disagree with where the object is in the resized image (by a factor
of up to 1.5 in every coordinate), so the detector is trained toward wrong boxes from the first
step. The loss is finite and decreases, no error or warning appears, but localisation on
correctly labelled held-out data stays poor.

Source: https://github.com/duanyiqun/YOLO-Minimal/issues/4
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)

S = 32
COLOURS = torch.tensor([[0.9, 0.15, 0.15], [0.15, 0.9, 0.15], [0.15, 0.15, 0.9]])
MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


def sample(orig):
    """One image of size orig x orig (values in [0,1]) and its box in original pixels."""
    img = 0.45 + 0.1 * torch.randn(3, orig, orig)
    label = int(torch.randint(0, 3, (1,)))
    w, h = [int(v) for v in torch.randint(orig // 5, orig // 2, (2,))]
    x0 = int(torch.randint(0, orig - w, (1,)))
    y0 = int(torch.randint(0, orig - h, (1,)))
    img[:, y0 : y0 + h, x0 : x0 + w] = COLOURS[label].view(3, 1, 1)
    box_px = torch.tensor([x0 + w / 2, y0 + h / 2, float(w), float(h)])
    return img.clamp(0, 1), box_px, label


def load_batch(n):
    imgs, boxes, labels, true_boxes = [], [], [], []
    for _ in range(n):
        orig = int(torch.randint(20, 49, (1,)))
        img, box_px, label = sample(orig)
        img = F.interpolate(img[None], size=(S, S), mode="bilinear", align_corners=False)[0]
        box = box_px / S  # BUG-LINE
        true_boxes.append(box_px / orig)  # reference, used only for evaluation
        imgs.append(img)
        boxes.append(box)
        labels.append(label)
    x = (torch.stack(imgs) - MEAN) / STD
    return x, torch.stack(boxes), torch.tensor(labels), torch.stack(true_boxes)


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
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
        self.cls = nn.Linear(128, 3)
        self.box = nn.Linear(128, 4)

    def forward(self, x):
        f = self.backbone(x)
        return self.cls(f), torch.sigmoid(self.box(f))


model = Detector()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(60):
    x, boxes, labels, _ = load_batch(32)
    logits, pred = model(x)
    loss = F.cross_entropy(logits, labels) + 5.0 * F.l1_loss(pred, boxes)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step} loss {loss.item():.4f}")

with torch.no_grad():
    x, _, labels, boxes = load_batch(256)
    logits, pred = model(x)
    print(
        f"held-out box L1 {F.l1_loss(pred, boxes).item():.4f}  "
        f"class acc {(logits.argmax(1) == labels).float().mean().item():.3f}"
    )

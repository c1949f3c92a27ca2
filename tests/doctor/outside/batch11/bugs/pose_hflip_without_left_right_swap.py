"""Train a small CNN keypoint regressor on synthetic 32x32 "person facing the camera" images with two
labelled hands: the person's right hand always appears in the left half of the image and the left
hand in the right half, both drawn identically, so the identity of a hand is given by its side.
The augmentation flips images horizontally with p=0.5 and mirrors the x coordinates, but does not
swap the left/right keypoint slots. After a flip, slot 0 (right hand) points into the right half of
the image, contradicting every unflipped sample, so the regressor is trained on inconsistent labels
and drifts towards the midpoint of both hands. No error is raised.

Source: https://github.com/robertklee/COCO-Human-Pose/pull/29
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
S = 32


def render(n):
    img = torch.zeros(n, 1, S, S)
    kp = torch.zeros(n, 2, 2)
    for i in range(n):
        for k, lo in ((0, 2), (1, 17)):
            x = int(torch.randint(lo, lo + 12, (1,)))
            y = int(torch.randint(2, S - 3, (1,)))
            val = 1.0
            img[i, 0, y - 1 : y + 2, x - 1 : x + 2] = val
            kp[i, k] = torch.tensor([x, y]).float()
    return img, kp


def augment(img, kp):
    flip = torch.rand(img.size(0)) < 0.5
    img = torch.where(flip[:, None, None, None], img.flip(-1), img)
    kp = kp.clone()
    kp[flip, :, 0] = (S - 1) - kp[flip, :, 0]  # BUG-LINE
    return img, kp


model = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Flatten(),
    nn.Linear(32 * 8 * 8, 64),
    nn.ReLU(),
    nn.Linear(64, 4),
)
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
imgs, kps = render(512)
for step in range(100):
    idx = torch.randint(0, 512, (64,))
    x, k = augment(imgs[idx], kps[idx])
    loss = F.smooth_l1_loss(model(x), k.view(-1, 4) / S)
    opt.zero_grad()
    loss.backward()
    opt.step()
ti, tk = render(256)
with torch.no_grad():
    err = (model(ti).view(-1, 2, 2) * S - tk).norm(dim=-1).mean().item()
print("final loss", round(loss.item(), 5), "mean keypoint error (px)", round(err, 3))

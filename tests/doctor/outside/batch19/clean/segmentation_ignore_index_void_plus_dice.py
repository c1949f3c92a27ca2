"""Multi-class semantic segmentation with void (255) boundary pixels and a CE + soft-Dice loss
(correct, unusual: a loss on probabilities, and masked pixels on purpose).

Like Pascal VOC, the synthetic masks mark a thin band around every object boundary as 255
("unknown"). Cross-entropy uses ignore_index=255 so those pixels contribute nothing, and the
soft-Dice term is computed on softmax probabilities with the same void pixels masked out
(the 255 label is mapped to class 0 only to build the one-hot tensor, then zeroed by the valid
mask). Evaluation mIoU also skips void pixels.

Source: https://github.com/arthurdouillard/CVPR2021_PLOP/issues/32
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

NUM_CLASSES, VOID, SIZE = 3, 255, 20


def make_sample(g):
    img = 0.2 * torch.randn(3, SIZE, SIZE, generator=g)
    mask = torch.zeros(SIZE, SIZE, dtype=torch.long)
    yy, xx = torch.meshgrid(torch.arange(SIZE), torch.arange(SIZE), indexing="ij")
    for cls in (1, 2):
        cy, cx = torch.randint(5, SIZE - 5, (2,), generator=g).tolist()
        r = int(torch.randint(3, 6, (1,), generator=g))
        d = ((yy - cy) ** 2 + (xx - cx) ** 2).float().sqrt()
        inside = d < r
        img[cls - 1][inside] += 1.0
        mask[inside] = cls
        mask[(d >= r - 0.7) & (d < r + 0.7)] = VOID
    return img, mask


def soft_dice_loss(logits, target, eps=1.0):
    probs = logits.softmax(1)
    valid = (target != VOID).unsqueeze(1).float()
    one_hot = F.one_hot(target.masked_fill(target == VOID, 0), NUM_CLASSES).permute(0, 3, 1, 2).float()
    probs, one_hot = probs * valid, one_hot * valid
    inter = (probs * one_hot).sum((0, 2, 3))
    denom = probs.sum((0, 2, 3)) + one_hot.sum((0, 2, 3))
    return 1 - ((2 * inter + eps) / (denom + eps)).mean()


class SegNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=2, dilation=2),
            nn.ReLU(),
            nn.Conv2d(16, NUM_CLASSES, 1),
        )

    def forward(self, x):
        return self.net(x)


def miou(pred, target):
    ious = []
    valid = target != VOID
    for c in range(NUM_CLASSES):
        p, t = (pred == c) & valid, (target == c) & valid
        ious.append((p & t).sum().item() / max((p | t).sum().item(), 1))
    return sum(ious) / len(ious)


def main():
    g = torch.Generator().manual_seed(0)
    samples = [make_sample(g) for _ in range(180)]
    images = torch.stack([s[0] for s in samples])
    masks = torch.stack([s[1] for s in samples])
    model = SegNet()
    ce = nn.CrossEntropyLoss(ignore_index=VOID)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(60):
        idx = torch.randint(0, 160, (8,), generator=g)
        logits = model(images[idx])
        loss = ce(logits, masks[idx]) + 0.5 * soft_dice_loss(logits, masks[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 15 == 0 or step == 59:
            with torch.no_grad():
                val = miou(model(images[160:]).argmax(1), masks[160:])
            print(f"step {step:3d} loss {loss.item():.4f} val mIoU {val:.3f}")


if __name__ == "__main__":
    main()

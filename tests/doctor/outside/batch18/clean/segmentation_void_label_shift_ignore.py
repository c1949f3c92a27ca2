"""Dilated-conv FCN for 3-class semantic segmentation whose label maps contain a
'void' (unlabelled) id.

Unusual but correct: the stored label maps use 0 = void and 1..3 = classes. The data
pipeline shifts labels by -1 so the network's 3 output channels match classes 0..2
and void becomes -1; the loss is nn.CrossEntropyLoss(ignore_index=-1), so void pixels
contribute neither loss nor gradient, and mIoU is computed only over pixels whose
ground truth is not void. Large void regions (unlabelled borders and blobs) are
present on purpose; predictions inside them are simply not scored.

Source: https://github.com/TUI-NICR/ESANet/issues/31
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

H = W = 24
N_CLASSES = 3
VOID = -1


def make_scenes(n, seed):
    g = torch.Generator().manual_seed(seed)
    yy, xx = torch.meshgrid(torch.arange(H), torch.arange(W), indexing="ij")
    raw = torch.ones(n, H, W, dtype=torch.long)  # class id 1 (stored) = background-ish "floor"
    imgs = torch.zeros(n, 3, H, W)
    for i in range(n):
        for cls in (2, 3):
            cx, cy = torch.randint(5, W - 5, (2,), generator=g).tolist()
            r = int(torch.randint(3, 5, (1,), generator=g))
            region = (
                ((xx - cx).abs() <= r) & ((yy - cy).abs() <= r)
                if cls == 2
                else (xx - cx) ** 2 + (yy - cy) ** 2 <= r * r
            )
            raw[i][region] = cls
        # unlabelled border + an unlabelled blob
        raw[i, :3, :] = 0
        raw[i, :, -3:] = 0
        bx, by = torch.randint(4, W - 4, (2,), generator=g).tolist()
        raw[i][(xx - bx) ** 2 + (yy - by) ** 2 <= 9] = 0
    palette = torch.tensor([[0.5, 0.5, 0.5], [0.1, 0.1, 0.1], [0.9, 0.2, 0.1], [0.1, 0.3, 0.9]])
    imgs = palette[raw].permute(0, 3, 1, 2) + 0.3 * torch.randn(n, 3, H, W, generator=g)
    labels = raw - 1  # void (0) -> -1, classes 1..3 -> 0..2
    return imgs, labels


class DilatedFCN(nn.Module):
    def __init__(self):
        super().__init__()
        layers, c = [], 3
        for d in (1, 2, 4, 1):
            layers += [nn.Conv2d(c, 24, 3, padding=d, dilation=d), nn.GroupNorm(4, 24), nn.ReLU()]
            c = 24
        self.body = nn.Sequential(*layers)
        self.cls = nn.Conv2d(24, N_CLASSES, 1)

    def forward(self, x):
        return self.cls(self.body(x))


def miou_ignore_void(pred, gt):
    valid = gt != VOID
    p, t = pred[valid], gt[valid]
    ious = []
    for k in range(N_CLASSES):
        union = ((p == k) | (t == k)).sum().item()
        if union:
            ious.append(((p == k) & (t == k)).sum().item() / union)
    return sum(ious) / len(ious)


def main():
    xtr, ytr = make_scenes(256, 1)
    xva, yva = make_scenes(64, 2)
    model = DilatedFCN()
    criterion = nn.CrossEntropyLoss(ignore_index=VOID)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(60):
        idx = torch.randint(0, len(xtr), (16,))
        loss = criterion(model(xtr[idx]), ytr[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0 or step == 59:
            with torch.no_grad():
                score = miou_ignore_void(model(xva).argmax(1), yva)
            print(f"step {step:3d} loss {loss.item():.4f} val_mIoU(non-void) {score:.3f}")


if __name__ == "__main__":
    main()

"""Small encoder-decoder semantic segmentation network with a "void" label and a per-iteration
polynomial learning-rate schedule.

Source: https://github.com/yassouali/pytorch-segmentation/issues/74

Clean program. Unusual but correct: (1) object boundaries are labelled 255 (void) and the loss
uses `ignore_index=255`, so those pixels contribute neither loss nor gradient; (2) the learning
rate follows a poly schedule defined in *iterations* (total = epochs * iters_per_epoch), so
`scheduler.step()` is deliberately called after every optimizer step, as the maintainers explain
in the linked thread; (3) the same random horizontal flip is applied to image and label map.
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

N_CLS = 3
VOID = 255
S = 24


def make_scenes(n, gen):
    imgs = 0.3 * torch.randn(n, 3, S, S, generator=gen)
    labels = torch.zeros(n, S, S, dtype=torch.long)
    yy, xx = torch.meshgrid(torch.arange(S), torch.arange(S), indexing="ij")
    for i in range(n):
        for cls in (1, 2):
            cy, cx = torch.randint(5, S - 5, (2,), generator=gen).tolist()
            r = torch.randint(3, 6, (1,), generator=gen).item()
            d = ((yy - cy) ** 2 + (xx - cx) ** 2).float().sqrt()
            labels[i][d < r] = cls
            labels[i][(d >= r - 0.7) & (d < r + 0.7)] = VOID
            imgs[i, cls] += (d < r).float()
    return imgs, labels


class TinySeg(nn.Module):
    def __init__(self):
        super().__init__()
        self.down = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU()
        )
        self.up = nn.Sequential(nn.ConvTranspose2d(32, 16, 2, stride=2), nn.ReLU(), nn.Conv2d(16, N_CLS, 1))

    def forward(self, x):
        return self.up(self.down(x))


def main():
    gen = torch.Generator().manual_seed(0)
    x, y = make_scenes(192, gen)
    model = TinySeg()
    epochs, bs = 8, 32
    iters_per_epoch = (len(x) + bs - 1) // bs
    total = epochs * iters_per_epoch
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda it: (1 - it / total) ** 0.9)
    criterion = nn.CrossEntropyLoss(ignore_index=VOID)
    for epoch in range(epochs):
        perm = torch.randperm(len(x))
        tot = 0.0
        for i in range(0, len(x), bs):
            idx = perm[i : i + bs]
            xb, yb = x[idx].clone(), y[idx].clone()
            flip = torch.rand(len(idx), generator=gen) < 0.5
            xb[flip] = xb[flip].flip(-1)
            yb[flip] = yb[flip].flip(-1)
            loss = criterion(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            tot += loss.item() * len(idx)
        with torch.no_grad():
            pred = model(x).argmax(1)
            valid = y != VOID
            acc = (pred[valid] == y[valid]).float().mean().item()
        print(f"epoch {epoch} loss {tot / len(x):.4f} pix_acc {acc:.3f} lr {opt.param_groups[0]['lr']:.5f}")


if __name__ == "__main__":
    main()

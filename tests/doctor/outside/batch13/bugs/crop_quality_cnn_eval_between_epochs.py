"""Image crop-quality classifier (small CNN with BatchNorm and dropout) validated after every epoch.

Source: https://github.com/HuiZeng/Grid-Anchor-based-Image-Cropping-Pytorch/issues/2

Bug: the validation routine puts the network into eval mode, but the training script only calls
`model.train()` once, before the epoch loop, and never switches back after validating. From the
second epoch on, every training step runs with BatchNorm in inference mode (frozen running
statistics from epoch 1, no batch statistics) and with dropout disabled. No error is raised; the
loss keeps falling a bit, but the model trains with stale normalisation and loses regularisation.
Fix: call `model.train()` at the start of every epoch (after validation).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


def make_images(n, gen):
    # class 1 = bright square roughly centred (a "good crop"), class 0 = square near a border
    x = torch.randn(n, 3, 16, 16, generator=gen) * 1.0
    y = torch.randint(0, 2, (n,), generator=gen)
    for i in range(n):
        if y[i] == 1:
            r, c = torch.randint(4, 8, (2,), generator=gen).tolist()
        else:
            r, c = torch.randint(0, 3, (2,), generator=gen).tolist()
            if torch.rand(1, generator=gen).item() < 0.5:
                r = 12 - r
        x[i, :, r : r + 4, c : c + 4] += 0.8
    return x * 2.0 + 0.5, y


class CropNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.b1 = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 16, 3, padding=1)
        self.b2 = nn.BatchNorm2d(16)
        self.drop = nn.Dropout(0.3)
        self.fc = nn.Linear(16 * 4 * 4, 2)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.b1(self.c1(x))), 2)
        x = F.max_pool2d(F.relu(self.b2(self.c2(x))), 2)
        return self.fc(self.drop(x.flatten(1)))


def evaluate(model, xv, yv):
    model.eval()
    with torch.no_grad():
        logits = model(xv)
        return F.cross_entropy(logits, yv).item(), (logits.argmax(1) == yv).float().mean().item()


def main():
    gen = torch.Generator().manual_seed(0)
    xtr, ytr = make_images(384, gen)
    xv, yv = make_images(192, gen)
    model = CropNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    bs = 32
    model.train()  # BUG-LINE
    for epoch in range(6):
        perm = torch.randperm(len(xtr))
        tot = 0.0
        for i in range(0, len(xtr), bs):
            idx = perm[i : i + bs]
            loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item() * len(idx)
        vl, va = evaluate(model, xv, yv)
        print(f"epoch {epoch} train_loss {tot / len(xtr):.4f} val_loss {vl:.4f} val_acc {va:.3f}")


if __name__ == "__main__":
    main()

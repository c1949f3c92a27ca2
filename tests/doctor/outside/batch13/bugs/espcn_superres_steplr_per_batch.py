"""ESPCN-style x2 super-resolution network trained with an epoch-based StepLR schedule.

Source: https://github.com/ivadomed/ivadomed/pull/55

Bug: the StepLR scheduler is configured in epochs (step_size = epochs // 2, gamma = 0.1), but
`scheduler.step()` is called inside the batch loop instead of once per epoch. The learning rate is
therefore divided by 10 every few *batches*; after the first epoch it is effectively zero and the
network stops improving (the L1 loss falls a little at the very start and then flattens, PSNR
stays far below what the model reaches with the intended schedule). No error or warning.
Fix: call `scheduler.step()` after the batch loop, once per epoch.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


def make_hr(n, gen, size=32):
    # smooth random textures: sum of a few random sinusoids
    yy, xx = torch.meshgrid(torch.linspace(0, 1, size), torch.linspace(0, 1, size), indexing="ij")
    imgs = torch.zeros(n, 1, size, size)
    for k in range(4):
        fx = torch.rand(n, 1, 1, generator=gen) * 8
        fy = torch.rand(n, 1, 1, generator=gen) * 8
        ph = torch.rand(n, 1, 1, generator=gen) * 6.28
        imgs[:, 0] += torch.sin(fx * 6.28 * xx + fy * 6.28 * yy + ph) / 4
    return (imgs + 1) / 2


class ESPCN(nn.Module):
    def __init__(self, scale=2):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 24, 5, padding=2),
            nn.Tanh(),
            nn.Conv2d(24, 12, 3, padding=1),
            nn.Tanh(),
            nn.Conv2d(12, scale * scale, 3, padding=1),
        )
        self.shuffle = nn.PixelShuffle(scale)

    def forward(self, lr):
        up = F.interpolate(lr, scale_factor=2, mode="bilinear", align_corners=False)
        return up + self.shuffle(self.body(lr))


def psnr(a, b):
    mse = F.mse_loss(a.clamp(0, 1), b).item()
    return 10 * math.log10(1.0 / max(mse, 1e-10))


def main():
    gen = torch.Generator().manual_seed(0)
    hr = make_hr(192, gen, 24)
    lr_imgs = F.avg_pool2d(hr, 2)
    hr_val = make_hr(64, gen, 24)
    lr_val = F.avg_pool2d(hr_val, 2)
    model = ESPCN()
    epochs = 8
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=epochs // 2, gamma=0.1)
    bs = 32
    for epoch in range(epochs):
        perm = torch.randperm(len(hr))
        tot = 0.0
        for i in range(0, len(hr), bs):
            idx = perm[i : i + bs]
            sr = model(lr_imgs[idx])
            loss = F.l1_loss(sr, hr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            scheduler.step()  # BUG-LINE
            tot += loss.item() * len(idx)
        with torch.no_grad():
            p = psnr(model(lr_val), hr_val)
        print(f"epoch {epoch} l1 {tot / len(hr):.4f} val_psnr {p:.2f} lr {opt.param_groups[0]['lr']:.2e}")


if __name__ == "__main__":
    main()

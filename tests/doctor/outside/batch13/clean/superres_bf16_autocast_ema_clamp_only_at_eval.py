"""x2 super-resolution CNN trained under bfloat16 autocast on CPU with an EMA copy of the weights.

Source: https://github.com/krasserm/super-resolution/issues/72

Clean program. As answered in the linked thread, the generator output is NOT clipped during
training (clipping would zero the gradient of every out-of-range pixel); outputs are clamped to
[0, 1] only when computing the evaluation PSNR. Other unusual but correct parts: the forward pass
runs under `torch.autocast("cpu", dtype=torch.bfloat16)` while the weights, the loss and the
optimizer stay in float32 (no GradScaler needed for bf16); an exponential moving average of the
weights is updated after every optimizer step with `torch.no_grad()` and is the model evaluated.
"""

import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


def make_hr(n, gen, size=24):
    yy, xx = torch.meshgrid(torch.linspace(0, 1, size), torch.linspace(0, 1, size), indexing="ij")
    imgs = torch.zeros(n, 1, size, size)
    for _ in range(3):
        fx = torch.rand(n, 1, 1, generator=gen) * 6
        fy = torch.rand(n, 1, 1, generator=gen) * 6
        ph = torch.rand(n, 1, 1, generator=gen) * 6.28
        imgs[:, 0] += torch.sin(6.28 * (fx * xx + fy * yy) + ph) / 3
    return (imgs + 1) / 2


class SRNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 24, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(24, 24, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(24, 4, 3, padding=1),
        )
        self.ps = nn.PixelShuffle(2)

    def forward(self, lr):
        base = F.interpolate(lr, scale_factor=2, mode="nearest")
        return base + self.ps(self.body(lr))


def psnr(sr, hr):
    mse = F.mse_loss(sr.clamp(0, 1), hr).item()
    return 10 * math.log10(1 / max(mse, 1e-10))


def main():
    gen = torch.Generator().manual_seed(0)
    hr = make_hr(192, gen)
    lr = F.avg_pool2d(hr, 2)
    hr_v = make_hr(48, gen)
    lr_v = F.avg_pool2d(hr_v, 2)
    model = SRNet()
    ema = copy.deepcopy(model).requires_grad_(False)
    decay = 0.9
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    bs = 16
    for epoch in range(5):
        perm = torch.randperm(len(hr))
        tot = 0.0
        for i in range(0, len(hr), bs):
            idx = perm[i : i + bs]
            with torch.autocast("cpu", dtype=torch.bfloat16):
                sr = model(lr[idx])
            loss = F.l1_loss(sr.float(), hr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                for pe, pm in zip(ema.parameters(), model.parameters()):
                    pe.mul_(decay).add_(pm, alpha=1 - decay)
            tot += loss.item() * len(idx)
        with torch.no_grad():
            print(f"epoch {epoch} l1 {tot / len(hr):.4f} ema_val_psnr {psnr(ema(lr_v), hr_v):.2f}")


if __name__ == "__main__":
    main()

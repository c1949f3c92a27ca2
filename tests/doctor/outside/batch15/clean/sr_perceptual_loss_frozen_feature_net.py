"""2x super-resolution of synthetic 8x8 -> 16x16 images with pixel L1 + perceptual loss.

Unusual but correct: the perceptual feature extractor is frozen (requires_grad=False,
eval mode, not in the optimizer). Features of the high-resolution target are computed
under no_grad/detached, but features of the generator output are NOT detached, because
the perceptual loss must back-propagate through the frozen extractor into the
generator. The BasicSR maintainer explains exactly this asymmetry (netF(real).detach()
vs netF(fake) without detach). Only the generator is optimised.

Source: https://github.com/XPixelGroup/BasicSR/issues/50
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

g = torch.Generator().manual_seed(1)
xx = torch.linspace(0, 6.28, 16)
freq = 1 + 2 * torch.rand(256, 1, 1, 1, generator=g)
hr_all = torch.sin(freq * xx.view(1, 1, 1, 16)) * torch.cos(freq * xx.view(1, 1, 16, 1))
lr_all = F.avg_pool2d(hr_all, 2)

feat_net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU())
feat_net.eval()
for p in feat_net.parameters():
    p.requires_grad_(False)

gen = nn.Sequential(
    nn.Conv2d(1, 32, 3, padding=1),
    nn.ReLU(),
    nn.Conv2d(32, 4, 3, padding=1),
    nn.PixelShuffle(2),
    nn.Conv2d(1, 1, 3, padding=1),
)
opt = torch.optim.Adam(gen.parameters(), lr=2e-3)

for step in range(80):
    i = torch.randint(0, 256, (16,))
    lr_img, hr = lr_all[i], hr_all[i]
    sr = gen(lr_img) + F.interpolate(lr_img, scale_factor=2, mode="nearest")
    with torch.no_grad():
        real_feat = feat_net(hr)
    fake_feat = feat_net(sr)
    loss_pix = F.l1_loss(sr, hr)
    loss_feat = F.l1_loss(fake_feat, real_feat.detach())
    loss = loss_pix + 0.1 * loss_feat
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step} pix {loss_pix.item():.4f} feat {loss_feat.item():.4f}")
assert all(p.grad is None for p in feat_net.parameters())
print("final", loss.item())

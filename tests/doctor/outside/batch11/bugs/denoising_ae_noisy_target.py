"""Train a small convolutional denoising autoencoder on synthetic 16x16 stripe images: the input is
the clean image plus Gaussian noise, the target should be the clean image. The batch variable is
overwritten with its noisy version before the reconstruction target is taken from it, so the target
is the noisy image itself. The network is trained to reproduce the noise (an identity mapping)
instead of removing it; the loss decreases normally, so nothing looks wrong.

Source: https://github.com/keon/3-min-pytorch/issues/18
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def make_clean(n):
    xs = torch.arange(16.0)
    freq = torch.randint(1, 4, (n, 1, 1)).float()
    phase = torch.rand(n, 1, 1) * 6.28
    img = torch.sin(xs.view(1, 1, 16) * freq * 0.4 + phase).expand(n, 16, 16)
    return img.unsqueeze(1).contiguous()


model = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1),
    nn.ReLU(),
    nn.Conv2d(16, 16, 3, padding=1),
    nn.ReLU(),
    nn.Conv2d(16, 1, 3, padding=1),
)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
data = make_clean(512)
for step in range(50):
    x = data[torch.randint(0, 512, (32,))]
    clean = x
    x = x + 0.5 * torch.randn_like(x)
    y = x  # BUG-LINE
    out = model(x)
    loss = F.mse_loss(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
with torch.no_grad():
    test = make_clean(128)
    noisy = test + 0.5 * torch.randn_like(test)
    err = F.mse_loss(model(noisy), test).item()
print("final train loss", round(loss.item(), 4))
print("denoising mse vs clean", round(err, 4), "noisy-input mse", round(F.mse_loss(noisy, test).item(), 4))

"""Image-to-image GAN (denoising generator + patch discriminator) with L1 + adversarial loss.

The generator's adversarial term is detached before it is added to the L1 loss (the
author had added .detach() to stop a memory leak from logging). The adversarial part
therefore contributes a constant to the generator loss and no gradient: the generator is
trained by L1 alone while the discriminator keeps training. Nothing errors, the total
loss still falls (the L1 part), so the GAN part is silently dead.

Source: https://github.com/guopengf/FL-MRCM/issues/10
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

g = torch.Generator().manual_seed(1)
clean = torch.tanh(torch.randn(512, 1, 16, 16, generator=g).cumsum(-1) * 0.3)
noisy = clean + 0.3 * torch.randn(512, 1, 16, 16, generator=g)

G = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1),
    nn.ReLU(),
    nn.Conv2d(16, 16, 3, padding=1),
    nn.ReLU(),
    nn.Conv2d(16, 1, 3, padding=1),
    nn.Tanh(),
)
D = nn.Sequential(
    nn.Conv2d(1, 16, 4, 2, 1),
    nn.LeakyReLU(0.2),
    nn.Conv2d(16, 32, 4, 2, 1),
    nn.LeakyReLU(0.2),
    nn.Conv2d(32, 1, 3, padding=1),
)
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()
history = []

for step in range(100):
    i = torch.randint(0, 512, (16,))
    x, y = noisy[i], clean[i]
    fake = G(x)

    d_real = D(y)
    d_fake = D(fake.detach())
    loss_d = bce(d_real, torch.ones_like(d_real)) + bce(d_fake, torch.zeros_like(d_fake))
    opt_d.zero_grad()
    loss_d.backward()
    opt_d.step()

    loss_l1 = F.l1_loss(fake, y)
    pred = D(fake)
    loss_adv_g = bce(pred, torch.ones_like(pred)).detach()  # BUG-LINE
    history.append(loss_adv_g.item())
    loss_g = loss_l1 + 0.05 * loss_adv_g
    opt_g.zero_grad()
    loss_g.backward()
    opt_g.step()
    if step % 25 == 0:
        print(f"step {step} d {loss_d.item():.3f} g_l1 {loss_l1.item():.3f} g_adv {loss_adv_g.item():.3f}")
print("final g", loss_g.item(), "mean adv", sum(history[-20:]) / 20)

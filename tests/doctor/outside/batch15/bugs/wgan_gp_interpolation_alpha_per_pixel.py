"""WGAN-GP on synthetic 8x8 "stripe" images with an MLP generator and critic.

The interpolation coefficient for the gradient penalty is drawn with the full shape of
the image batch, i.e. one random number per pixel, instead of one per example with shape
(B, 1, 1, 1). The penalised points are then not on the straight lines between real and
fake samples that the WGAN-GP derivation requires, so the Lipschitz constraint is
enforced at the wrong places. Training runs, the penalty is finite and losses move.

Source: https://github.com/eriklindernoren/PyTorch-GAN/issues/5
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

g = torch.Generator().manual_seed(1)
phase = torch.rand(512, 1, 1, 1, generator=g) * 6.28
cols = torch.arange(8).view(1, 1, 1, 8).float()
real_data = torch.sin(cols * 0.8 + phase).expand(512, 1, 8, 8).contiguous()

G = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.Tanh())
critic = nn.Sequential(nn.Linear(64, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-4, betas=(0.0, 0.9))
opt_c = torch.optim.Adam(critic.parameters(), lr=1e-4, betas=(0.0, 0.9))
lam = 10.0


def gradient_penalty(real, fake):
    alpha = torch.rand(real.shape)  # BUG-LINE
    inter = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    out = critic(inter.view(inter.shape[0], -1))
    grads = torch.autograd.grad(
        outputs=out, inputs=inter, grad_outputs=torch.ones_like(out), create_graph=True, retain_graph=True
    )[0]
    return ((grads.view(grads.shape[0], -1).norm(2, dim=1) - 1) ** 2).mean()


for it in range(30):
    for _ in range(3):
        real = real_data[torch.randint(0, 512, (32,))]
        fake = G(torch.randn(32, 8)).view(32, 1, 8, 8).detach()
        gp = gradient_penalty(real, fake)
        loss_c = critic(fake.view(32, -1)).mean() - critic(real.view(32, -1)).mean() + lam * gp
        opt_c.zero_grad()
        loss_c.backward()
        opt_c.step()
    loss_g = -critic(G(torch.randn(32, 8))).mean()
    opt_g.zero_grad()
    loss_g.backward()
    opt_g.step()
    if it % 10 == 0:
        print(f"iter {it} critic {loss_c.item():.3f} gp {gp.item():.3f} gen {loss_g.item():.3f}")
print("final critic", loss_c.item())

"""GAN with relativistic-free hinge loss and R1 + R2 zero-centred gradient penalties (8x8 images).

Unusual but correct: in the discriminator step the real batch and the generator output
are both detached and then marked requires_grad_(True), so torch.autograd.grad (with
create_graph=True) can take gradients of D's outputs with respect to the samples for the
R1 (real) and R2 (fake) penalties. The penalties regularise only the discriminator;
the generator is not meant to receive gradient from R2, as the R3GAN maintainer explains.
The generator step uses a fresh, non-detached forward. Two optimizers.

Source: https://github.com/brownvc/R3GAN/issues/12
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

g = torch.Generator().manual_seed(1)
cols = torch.arange(8.0).view(1, 1, 1, 8)
real_data = (
    torch.tanh(2 * torch.sin(cols * 0.7 + 6.28 * torch.rand(512, 1, 1, 1, generator=g)))
    .expand(512, 1, 8, 8)
    .contiguous()
)

G = nn.Sequential(nn.Linear(16, 128), nn.ReLU(), nn.Linear(128, 64), nn.Tanh(), nn.Unflatten(1, (1, 8, 8)))
D = nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.LeakyReLU(0.2), nn.Linear(128, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.0, 0.99))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.0, 0.99))
gamma = 1.0


def grad_sq(out, x):
    (gr,) = torch.autograd.grad(out.sum(), x, create_graph=True)
    return gr.pow(2).flatten(1).sum(1).mean()


for step in range(60):
    real = real_data[torch.randint(0, 512, (32,))].detach().requires_grad_(True)
    fake = G(torch.randn(32, 16)).detach().requires_grad_(True)
    d_real, d_fake = D(real), D(fake)
    loss_adv = torch.relu(1 - d_real).mean() + torch.relu(1 + d_fake).mean()
    r1, r2 = grad_sq(d_real, real), grad_sq(d_fake, fake)
    loss_d = loss_adv + gamma / 2 * (r1 + r2)
    opt_d.zero_grad()
    loss_d.backward()
    opt_d.step()

    loss_g = -D(G(torch.randn(32, 16))).mean()
    opt_g.zero_grad()
    loss_g.backward()
    opt_g.step()
    if step % 20 == 0:
        print(f"step {step} d {loss_adv.item():.3f} r1 {r1.item():.4f} r2 {r2.item():.4f} g {loss_g.item():.3f}")
print("final d", loss_d.item())

"""WGAN-GP on small texture patches (correct, unusual: second-order gradients, critic steps
per generator step, two optimizers).

The critic loss includes the gradient penalty lambda * (||grad_x D(x_hat)||_2 - 1)^2 on random
interpolates between real and (detached) fake patches. The input gradient is obtained with
torch.autograd.grad(create_graph=True) so that backward through the penalty differentiates the
gradient itself (double backward) into the critic's weights. The critic is stepped n_critic
times per generator step; the whole critic loss is backpropagated once. The critic has no
BatchNorm (it would break the per-sample penalty).

Source: https://github.com/Zeleni9/pytorch-wgan/issues/20
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

P = 8  # patch side
Z = 16


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(Z, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, P * P))

    def forward(self, z):
        return torch.tanh(self.net(z))


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(P * P, 64), nn.LeakyReLU(0.2), nn.Linear(64, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1)
        )

    def forward(self, x):
        return self.net(x)


def real_patches(n, g):
    xx = torch.arange(P).float()
    f = torch.randint(1, 3, (n, 1), generator=g).float()
    ph = torch.rand(n, 1, generator=g) * 6.28
    rows = torch.sin(f * xx[None] * 6.28 / P + ph)
    return (rows[:, None, :].expand(n, P, P)).reshape(n, P * P) * 0.8


def gradient_penalty(critic, real, fake, g):
    eps = torch.rand(real.shape[0], 1, generator=g)
    x_hat = (eps * real + (1 - eps) * fake).requires_grad_(True)
    scores = critic(x_hat)
    grads = torch.autograd.grad(
        outputs=scores, inputs=x_hat, grad_outputs=torch.ones_like(scores), create_graph=True, retain_graph=True
    )[0]
    return ((grads.norm(2, dim=1) - 1) ** 2).mean()


def main():
    g = torch.Generator().manual_seed(0)
    gen, critic = Generator(), Critic()
    opt_g = torch.optim.Adam(gen.parameters(), lr=1e-3, betas=(0.5, 0.9))
    opt_c = torch.optim.Adam(critic.parameters(), lr=1e-3, betas=(0.5, 0.9))
    n_critic, lam = 3, 10.0
    for it in range(60):
        for _ in range(n_critic):
            real = real_patches(32, g)
            fake = gen(torch.randn(32, Z, generator=g)).detach()
            gp = gradient_penalty(critic, real, fake, g)
            loss_c = critic(fake).mean() - critic(real).mean() + lam * gp
            opt_c.zero_grad()
            loss_c.backward()
            opt_c.step()
        fake = gen(torch.randn(32, Z, generator=g))
        loss_g = -critic(fake).mean()
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()
        if it % 10 == 0 or it == 59:
            print(f"iter {it:3d} critic {loss_c.item():.4f} gp {gp.item():.4f} gen {loss_g.item():.4f}")


if __name__ == "__main__":
    main()

"""A discriminator trained with a DRAGAN-style gradient penalty: the norm of the
gradient of D's output with respect to perturbed real inputs is penalised. The
input gradient is obtained with torch.autograd.grad(create_graph=True) so that the
penalty itself can be backpropagated (a double backward), which is intended.

Source: https://arxiv.org/abs/1705.07215
"""

import torch
from torch import nn

torch.manual_seed(0)
D = nn.Sequential(nn.Linear(2, 64), nn.Tanh(), nn.Linear(64, 1))
opt = torch.optim.Adam(D.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()
for _step in range(6):
    real = torch.randn(64, 2) + 2.0
    fake = torch.randn(64, 2) - 2.0
    pert = (real + 0.5 * real.std() * torch.rand_like(real)).requires_grad_(True)
    out = D(pert)
    (grad,) = torch.autograd.grad(out.sum(), pert, create_graph=True)
    gp = ((grad.norm(2, dim=1) - 1) ** 2).mean()
    loss = bce(D(real), torch.ones(64, 1)) + bce(D(fake), torch.zeros(64, 1)) + 10.0 * gp
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())

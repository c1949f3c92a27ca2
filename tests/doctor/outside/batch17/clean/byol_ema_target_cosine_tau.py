"""BYOL on synthetic vectors with an online network and an EMA target network.

Clean program. Unusual on purpose: the target network is a deepcopy of the online
encoder+projector whose parameters are frozen (requires_grad_(False)) and never seen by
the optimizer; it is updated only by an exponential moving average written in place into
.data, with tau following a cosine schedule from 0.99 to 1.0. Target outputs are computed
under no_grad. The predictor exists only on the online side. The report discusses BYOL
training behaviour (copying the online weights into the target at init is fine); this
program follows that design.

Source: https://github.com/lucidrains/byol-pytorch/issues/39
"""

import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

D_IN, N_CLUSTERS, STEPS = 24, 4, 150
centers = torch.randn(N_CLUSTERS, D_IN) * 2.0


def sample(n):
    y = torch.randint(0, N_CLUSTERS, (n,))
    return centers[y] + torch.randn(n, D_IN), y


def augment(x):
    return x * (torch.rand_like(x) > 0.25).float() + 0.4 * torch.randn_like(x)


def mlp(i, h, o):
    return nn.Sequential(nn.Linear(i, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Linear(h, o))


online = nn.Sequential(mlp(D_IN, 64, 32), mlp(32, 64, 16))  # encoder + projector
predictor = mlp(16, 64, 16)
target = copy.deepcopy(online)
target.requires_grad_(False)

opt = torch.optim.Adam(list(online.parameters()) + list(predictor.parameters()), lr=1e-3)


def regression_loss(p, z):
    return 2 - 2 * F.cosine_similarity(p, z, dim=-1)


@torch.no_grad()
def ema_update(tau):
    for po, pt in zip(online.parameters(), target.parameters()):
        pt.data.mul_(tau).add_(po.data, alpha=1 - tau)
    for bo, bt in zip(online.buffers(), target.buffers()):
        bt.copy_(bo)


for step in range(STEPS):
    x, _ = sample(96)
    v1, v2 = augment(x), augment(x)
    p1, p2 = predictor(online(v1)), predictor(online(v2))
    with torch.no_grad():
        t1, t2 = target(v1), target(v2)
    loss = (regression_loss(p1, t2) + regression_loss(p2, t1)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    tau = 1 - (1 - 0.99) * (math.cos(math.pi * step / STEPS) + 1) / 2
    ema_update(tau)
    if step % 30 == 0 or step == STEPS - 1:
        print(f"step {step:3d}  loss {loss.item():.4f}  tau {tau:.4f}")

online.eval()
with torch.no_grad():
    x, y = sample(400)
    f = F.normalize(online[0](x), dim=1)
    sim = f @ f.T
    same = (y[:, None] == y[None, :]).float()
    print(
        "mean cos same-cluster %.3f  diff-cluster %.3f"
        % ((sim * same).sum() / same.sum(), (sim * (1 - same)).sum() / (1 - same).sum())
    )

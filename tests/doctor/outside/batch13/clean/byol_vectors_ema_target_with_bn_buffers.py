"""BYOL-style self-supervised training on synthetic vectors with an EMA target
network that contains BatchNorm (clean).

Unusual but correct: the target encoder/projector is a deep copy of the online
network with requires_grad disabled; it receives no gradients and is updated
only by an exponential moving average of the online parameters under
torch.no_grad(). The BatchNorm running statistics (buffers) are copied too, so
the target's normalisation stays consistent with its weights. Only the online
branch has a predictor; the loss is symmetrised over the two views. A kNN probe
on the latent class is printed.

Source: https://github.com/saltoricristiano/cosmix-uda/issues/21
"""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N, C, D_SIG, D_NUIS = 3000, 6, 8, 16
labels = torch.randint(0, C, (N,))
prototypes = torch.randn(C, D_SIG) * 2.0
data = torch.cat([prototypes[labels] + 0.3 * torch.randn(N, D_SIG), 3.0 * torch.randn(N, D_NUIS)], dim=1)


def augment(x):
    keep = (torch.rand(x.shape[0], D_NUIS) < 0.3).float()
    nuis = keep * x[:, D_SIG:] + (1 - keep) * 3.0 * torch.randn(x.shape[0], D_NUIS)
    return torch.cat([x[:, :D_SIG] + 0.3 * torch.randn(x.shape[0], D_SIG), nuis], dim=1)


def mlp(i, h, o):
    return nn.Sequential(nn.Linear(i, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Linear(h, o))


online = nn.Sequential(mlp(D_SIG + D_NUIS, 128, 32), mlp(32, 64, 16))
predictor = mlp(16, 64, 16)
target = copy.deepcopy(online)
for p in target.parameters():
    p.requires_grad_(False)
opt = torch.optim.Adam(list(online.parameters()) + list(predictor.parameters()), lr=1e-3)


@torch.no_grad()
def ema_update(tau):
    for po, pt in zip(online.parameters(), target.parameters()):
        pt.mul_(tau).add_(po, alpha=1 - tau)
    for bo, bt in zip(online.buffers(), target.buffers()):
        bt.copy_(bo)


def byol_loss(p, z):
    return 2 - 2 * F.cosine_similarity(p, z.detach(), dim=-1).mean()


def knn_accuracy(k=10):
    online.eval()
    with torch.no_grad():
        e = F.normalize(online[0](data), dim=1)
    online.train()
    sim = e[2400:] @ e[:2400].T
    votes = F.one_hot(labels[:2400][sim.topk(k, dim=1).indices], C).sum(1)
    return (votes.argmax(1) == labels[2400:]).float().mean().item()


for step in range(500):
    x = data[torch.randint(0, 2400, (256,))]
    v1, v2 = augment(x), augment(x)
    p1, p2 = predictor(online(v1)), predictor(online(v2))
    with torch.no_grad():
        z1, z2 = target(v1), target(v2)
    loss = byol_loss(p1, z2) + byol_loss(p2, z1)
    opt.zero_grad()
    loss.backward()
    opt.step()
    ema_update(tau=0.99)
    if step % 100 == 0 or step == 499:
        print(f"step {step:3d}  byol loss {loss.item():.4f}  kNN acc {knn_accuracy():.3f}")

"""BYOL self-supervised pre-training of a tiny CNN on synthetic 8x8 images.

Unusual but correct: the target network (a deep copy of the online encoder+projector)
has requires_grad=False, is run under torch.no_grad() and is never given to an
optimizer; it is updated only by an exponential moving average of the online weights
after each optimizer step. The stop-gradient on the target branch is what BYOL
prescribes, and the lightning-bolts thread confirms that running the target in no_grad
is equivalent to detaching its outputs. Only the online branch has a predictor.
A linear probe at the end checks the features are useful.

Source: https://github.com/Lightning-Universe/lightning-bolts/issues/801
"""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

g = torch.Generator().manual_seed(1)
protos = torch.randn(4, 1, 8, 8, generator=g)
y_all = torch.randint(0, 4, (512,), generator=g)
x_all = protos[y_all] + 0.7 * torch.randn(512, 1, 8, 8, generator=g)


def augment(x):
    x = torch.where(torch.rand(x.shape[0], 1, 1, 1) < 0.5, x.flip(-1), x)
    return x * (0.8 + 0.4 * torch.rand(x.shape[0], 1, 1, 1)) + 0.3 * torch.randn_like(x)


def mlp(i, o):
    return nn.Sequential(nn.Linear(i, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, o))


encoder = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten()
)
online = nn.Sequential(encoder, mlp(64, 32))
predictor = mlp(32, 32)
target = copy.deepcopy(online)
for p in target.parameters():
    p.requires_grad_(False)

opt = torch.optim.Adam(list(online.parameters()) + list(predictor.parameters()), lr=2e-3)
tau = 0.98


def byol_loss(p, z):
    return 2 - 2 * F.cosine_similarity(p, z, dim=-1).mean()


for step in range(60):
    x = x_all[torch.randint(0, 512, (32,))]
    v1, v2 = augment(x), augment(x)
    p1, p2 = predictor(online(v1)), predictor(online(v2))
    with torch.no_grad():
        z1, z2 = target(v1), target(v2)
    loss = byol_loss(p1, z2) + byol_loss(p2, z1)
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        for pt, po in zip(target.parameters(), online.parameters()):
            pt.mul_(tau).add_(po, alpha=1 - tau)
        for bt, bo in zip(target.buffers(), online.buffers()):
            bt.copy_(bo)
    if step % 20 == 0:
        print(f"step {step} byol loss {loss.item():.4f}")

encoder.eval()
with torch.no_grad():
    feats = encoder(x_all)
probe = nn.Linear(64, 4)
popt = torch.optim.Adam(probe.parameters(), lr=1e-2)
for _ in range(100):
    l = F.cross_entropy(probe(feats[:400]), y_all[:400])
    popt.zero_grad()
    l.backward()
    popt.step()
acc = (probe(feats[400:]).argmax(-1) == y_all[400:]).float().mean().item()
print("linear probe acc", acc)

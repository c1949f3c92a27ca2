"""Self-supervised pre-training of a small CNN encoder with VICReg on synthetic images: two
augmented views per image go through the same encoder and expander, and the loss is the sum of
an invariance term (MSE between the two embeddings), a variance term (hinge keeping each
embedding dimension's batch standard deviation above 1) and a covariance term (penalising
off-diagonal covariance). There are no negatives, no stop-gradient, no momentum encoder and no
labels; the unusual-looking variance/covariance terms are what prevent collapse. A linear probe
(closed-form least squares on frozen features) reports how well the hidden classes are separated.

Source: https://arxiv.org/abs/2105.04906
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)

K = 4
PROTOS = torch.randn(K, 3, 4, 4)


def make_batch(n):
    y = torch.randint(0, K, (n,))
    x = F.interpolate(PROTOS[y] + 0.6 * torch.randn(n, 3, 4, 4), size=(16, 16), mode="bilinear", align_corners=False)
    return x, y


def augment(x):
    x = torch.roll(x, shifts=torch.randint(-2, 3, (2,)).tolist(), dims=(2, 3))
    return x * (0.8 + 0.4 * torch.rand(x.size(0), 1, 1, 1)) + 0.3 * torch.randn_like(x)


encoder = nn.Sequential(
    nn.Conv2d(3, 32, 3, padding=1),
    nn.BatchNorm2d(32),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1),
    nn.BatchNorm2d(64),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    nn.Flatten(),
)
expander = nn.Sequential(nn.Linear(64, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Linear(128, 128))


def off_diagonal(m):
    n = m.size(0)
    return m.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()


def vicreg(z1, z2, sim_w=25.0, var_w=25.0, cov_w=1.0):
    n, d = z1.shape
    inv = F.mse_loss(z1, z2)
    z1 = z1 - z1.mean(0)
    z2 = z2 - z2.mean(0)
    std1 = torch.sqrt(z1.var(0) + 1e-4)
    std2 = torch.sqrt(z2.var(0) + 1e-4)
    var = F.relu(1 - std1).mean() / 2 + F.relu(1 - std2).mean() / 2
    cov1 = (z1.t() @ z1) / (n - 1)
    cov2 = (z2.t() @ z2) / (n - 1)
    cov = off_diagonal(cov1).pow(2).sum() / d + off_diagonal(cov2).pow(2).sum() / d
    return sim_w * inv + var_w * var + cov_w * cov


def linear_probe_acc():
    encoder.eval()
    with torch.no_grad():
        xtr, ytr = make_batch(400)
        xte, yte = make_batch(400)
        ftr = torch.cat([encoder(xtr), torch.ones(400, 1)], 1)
        fte = torch.cat([encoder(xte), torch.ones(400, 1)], 1)
        w = torch.linalg.lstsq(ftr, F.one_hot(ytr, K).float()).solution
        acc = ((fte @ w).argmax(1) == yte).float().mean().item()
    encoder.train()
    return acc


print(f"linear probe before pre-training: {linear_probe_acc():.3f}")
opt = torch.optim.Adam(list(encoder.parameters()) + list(expander.parameters()), lr=1e-3)
for step in range(60):
    x, _ = make_batch(64)
    loss = vicreg(expander(encoder(augment(x))), expander(encoder(augment(x))))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step} vicreg loss {loss.item():.4f}")
print(f"linear probe after pre-training: {linear_probe_acc():.3f}")

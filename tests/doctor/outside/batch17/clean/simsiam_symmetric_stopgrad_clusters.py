"""SimSiam-style self-supervised pretraining on synthetic clustered vectors.

Clean program. Unusual on purpose: the loss compares the predictor output of one view
with the projection of the other view under a stop-gradient (z.detach()), symmetrised
over both views, so half of each loss term deliberately sends no gradient into the
encoder; the encoder uses BatchNorm, which mixes samples within the batch by design. The
report is about an implementation that forgot the stop-gradient on z; here the detach is
present exactly as in the official SimSiam builder. A linear-probe accuracy is printed
at the end to show the representation did not collapse.

Source: https://github.com/lightly-ai/lightly/issues/559
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

D_IN, D_REP, N_CLUSTERS = 32, 32, 5
centers = torch.randn(N_CLUSTERS, D_IN) * 2.0


def sample(n):
    y = torch.randint(0, N_CLUSTERS, (n,))
    return centers[y] + torch.randn(n, D_IN), y


def augment(x):
    keep = (torch.rand_like(x) > 0.2).float()
    return x * keep * torch.empty(x.size(0), 1).uniform_(0.8, 1.2) + 0.3 * torch.randn_like(x)


encoder = nn.Sequential(nn.Linear(D_IN, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, D_REP), nn.BatchNorm1d(D_REP))
predictor = nn.Sequential(nn.Linear(D_REP, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, D_REP))
opt = torch.optim.SGD(
    list(encoder.parameters()) + list(predictor.parameters()), lr=0.05, momentum=0.9, weight_decay=1e-4
)


def neg_cos(p, z):
    return -F.cosine_similarity(p, z.detach(), dim=-1).mean()


for step in range(200):
    x, _ = sample(128)
    x1, x2 = augment(x), augment(x)
    z1, z2 = encoder(x1), encoder(x2)
    p1, p2 = predictor(z1), predictor(z2)
    loss = 0.5 * neg_cos(p1, z2) + 0.5 * neg_cos(p2, z1)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 40 == 0 or step == 199:
        zstd = F.normalize(z1, dim=1).std(dim=0).mean().item()
        print(f"step {step:3d}  loss {loss.item():.4f}  per-dim std of normalised z {zstd:.4f}")

# linear probe on frozen features
encoder.eval()
with torch.no_grad():
    xtr, ytr = sample(512)
    xte, yte = sample(256)
    ftr, fte = encoder(xtr), encoder(xte)
probe = nn.Linear(D_REP, N_CLUSTERS)
popt = torch.optim.Adam(probe.parameters(), lr=1e-2)
for _ in range(100):
    l = F.cross_entropy(probe(ftr), ytr)
    popt.zero_grad()
    l.backward()
    popt.step()
print("linear probe acc", (probe(fte).argmax(1) == yte).float().mean().item())

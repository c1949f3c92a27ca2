"""Metric learning with a discriminative (pull/push) clustering loss, as used for instance-embedding: an MLP maps points to 8-D embeddings, a variance term pulls each embedding to within delta_v of its instance mean and a distance term pushes instance means at least 2*delta_d apart. The distance of each embedding to its cluster centre must be the L2 norm over the embedding dimension (dim=1); it is taken over dim=0, i.e. across the samples of the cluster, which yields one number per embedding coordinate instead of one per sample. Shapes still broadcast and the mean is a scalar, so there is no error; the pull term optimises the wrong quantity from the first step.
Source: https://github.com/klintan/pytorch-lanenet/issues/12
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
K, PER, IN, EMB = 6, 40, 12, 8
centres = torch.randn(K, IN) * 2
labels = torch.arange(K).repeat_interleave(PER)
X = centres[labels] + 0.8 * torch.randn(K * PER, IN)
DELTA_V, DELTA_D = 0.5, 1.5

net = nn.Sequential(nn.Linear(IN, 64), nn.ReLU(), nn.Linear(64, EMB))
optimizer = torch.optim.Adam(net.parameters(), lr=3e-3)


def discriminative_loss(emb, lab):
    means, pull = [], 0.0
    for k in lab.unique():
        e = emb[lab == k]
        mu = e.mean(0)
        means.append(mu)
        dist = torch.norm(e - mu, dim=0)  # BUG-LINE
        pull = pull + torch.clamp(dist - DELTA_V, min=0).pow(2).mean()
    means = torch.stack(means)
    pull = pull / len(means)
    md = torch.cdist(means, means)
    off = ~torch.eye(len(means), dtype=torch.bool)
    push = torch.clamp(2 * DELTA_D - md[off], min=0).pow(2).mean()
    reg = means.norm(dim=1).mean()
    return pull + push + 0.001 * reg, pull, push


for step in range(60):
    perm = torch.randperm(K * PER)[:120]
    loss, pull, push = discriminative_loss(net(X[perm]), labels[perm])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f} pull {pull.item():.4f} push {push.item():.4f}")

with torch.no_grad():
    e = net(X)
    mus = torch.stack([e[labels == k].mean(0) for k in range(K)])
    within = (e - mus[labels]).norm(dim=1).mean().item()
print("mean per-sample distance to centre", round(within, 4))

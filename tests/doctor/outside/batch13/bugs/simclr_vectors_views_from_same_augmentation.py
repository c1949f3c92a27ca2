"""SimCLR-style contrastive pre-training (NT-Xent loss) on synthetic vectors with
an 8-way latent class and large nuisance dimensions, followed by a kNN probe.

Each batch carries two independently augmented views, batch["aug1"] and
batch["aug2"]. The training step encodes batch["aug1"] twice, so the two
"views" of every sample are identical. The positive pair is trivially matched,
the NT-Xent loss collapses towards its minimum within a few steps and the
encoder never has to become invariant to the augmentations: it keeps relying on
the nuisance dimensions, and the kNN probe on the latent class is poor.

Source: https://github.com/catalyst-team/catalyst/pull/1278
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N, C, D_SIG, D_NUIS = 4000, 8, 8, 24
labels = torch.randint(0, C, (N,))
prototypes = torch.randn(C, D_SIG) * 2.0
data = torch.cat([prototypes[labels] + 0.3 * torch.randn(N, D_SIG), 3.0 * torch.randn(N, D_NUIS)], dim=1)


def augment(x):
    nuis = 3.0 * torch.randn(x.shape[0], D_NUIS)
    keep = (torch.rand(x.shape[0], D_NUIS) < 0.3).float()
    sig = x[:, :D_SIG] + 0.3 * torch.randn(x.shape[0], D_SIG)
    return torch.cat([sig, keep * x[:, D_SIG:] + (1 - keep) * nuis], dim=1)


def nt_xent(z1, z2, tau=0.2):
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    sim = z @ z.T / tau
    n = z1.shape[0]
    sim.fill_diagonal_(float("-inf"))
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
    return F.cross_entropy(sim, targets)


encoder = nn.Sequential(nn.Linear(D_SIG + D_NUIS, 128), nn.ReLU(), nn.Linear(128, 32))
projector = nn.Sequential(nn.ReLU(), nn.Linear(32, 32))
opt = torch.optim.Adam(list(encoder.parameters()) + list(projector.parameters()), lr=1e-3)


def knn_accuracy(k=10):
    with torch.no_grad():
        e = F.normalize(encoder(data), dim=1)
        tr, te = slice(0, 3000), slice(3000, N)
        sim = e[te] @ e[tr].T
        idx = sim.topk(k, dim=1).indices
        votes = F.one_hot(labels[tr][idx], C).sum(1)
        return (votes.argmax(1) == labels[te]).float().mean().item()


for step in range(600):
    idx = torch.randint(0, 3000, (256,))
    x = data[idx]
    batch = {"aug1": augment(x), "aug2": augment(x)}
    emb1 = projector(encoder(batch["aug1"]))
    emb2 = projector(encoder(batch["aug1"]))  # BUG-LINE
    loss = nt_xent(emb1, emb2)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 100 == 0 or step == 599:
        print(f"step {step:3d}  nt-xent {loss.item():.4f}  kNN acc {knn_accuracy():.3f}")

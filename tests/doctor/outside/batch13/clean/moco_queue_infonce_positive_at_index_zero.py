"""MoCo-style contrastive learning with a momentum key encoder and a queue of
negatives on synthetic vectors (clean).

Unusual but correct: the logits are [l_pos, l_neg] with the single positive in
column 0 and the queue keys in the remaining columns, so the cross-entropy
labels are all zeros on purpose; keys are computed under no_grad by the
momentum encoder and enqueued after each step (FIFO, detached); only the query
encoder is optimised. A kNN probe on the latent class is printed.

Source: https://github.com/amazon-science/video-contrastive-learning/issues/5
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


q_enc = nn.Sequential(nn.Linear(D_SIG + D_NUIS, 128), nn.ReLU(), nn.Linear(128, 32))
k_enc = copy.deepcopy(q_enc)
for p in k_enc.parameters():
    p.requires_grad_(False)
opt = torch.optim.SGD(q_enc.parameters(), lr=0.05, momentum=0.9)
K, m, tau = 2048, 0.99, 0.1
queue = F.normalize(torch.randn(K, 32), dim=1)
ptr = 0


def knn_accuracy(k=10):
    with torch.no_grad():
        e = F.normalize(q_enc(data), dim=1)
    sim = e[2400:] @ e[:2400].T
    votes = F.one_hot(labels[:2400][sim.topk(k, dim=1).indices], C).sum(1)
    return (votes.argmax(1) == labels[2400:]).float().mean().item()


for step in range(500):
    x = data[torch.randint(0, 2400, (128,))]
    q = F.normalize(q_enc(augment(x)), dim=1)
    with torch.no_grad():
        for pq, pk in zip(q_enc.parameters(), k_enc.parameters()):
            pk.mul_(m).add_(pq, alpha=1 - m)
        k = F.normalize(k_enc(augment(x)), dim=1)
    l_pos = (q * k).sum(1, keepdim=True)
    l_neg = q @ queue.T
    logits = torch.cat([l_pos, l_neg], dim=1) / tau
    targets = torch.zeros(logits.shape[0], dtype=torch.long)
    loss = F.cross_entropy(logits, targets)
    opt.zero_grad()
    loss.backward()
    opt.step()
    queue[ptr : ptr + k.shape[0]] = k
    ptr = (ptr + k.shape[0]) % K
    if step % 100 == 0 or step == 499:
        print(f"step {step:3d}  infonce {loss.item():.4f}  kNN acc {knn_accuracy():.3f}")

"""MoCo-v2 style self-supervised pre-training on synthetic vectors with two random "augmented views" per sample:
a query backbone + projection head, a key backbone + key head updated as an exponential moving average of the
query side, and a queue of negative keys for the InfoNCE loss. The momentum update zips the list of query
parameters with the list of key parameters, but the query list contains only the backbone while the key list
contains backbone and head; zip stops at the shorter list, so the key projection head is never updated and
stays at its random initialisation for the whole run. Nothing errors: zip silently truncates.
Source: https://github.com/Lightning-Universe/lightning-bolts/issues/1059
"""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
DIN, C = 32, 8
protos = torch.randn(C, DIN)


def two_views(n):
    y = torch.randint(0, C, (n,))
    base = protos[y] + 0.5 * torch.randn(n, DIN)
    aug = lambda x: x * (torch.rand(n, DIN) > 0.2).float() + 0.3 * torch.randn(n, DIN)
    return aug(base), aug(base), y


backbone_q = nn.Sequential(nn.Linear(DIN, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
head_q = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32))
backbone_k = copy.deepcopy(backbone_q)
head_k = copy.deepcopy(head_q)
for p in list(backbone_k.parameters()) + list(head_k.parameters()):
    p.requires_grad_(False)
opt = torch.optim.SGD(list(backbone_q.parameters()) + list(head_q.parameters()), lr=0.05, momentum=0.9)
queue = F.normalize(torch.randn(512, 32), dim=1)
head_k_init = head_k[2].weight.clone()
M, TAU = 0.99, 0.2
for step in range(200):
    x1, x2, _ = two_views(64)
    q = F.normalize(head_q(backbone_q(x1)), dim=1)
    with torch.no_grad():
        q_params = list(backbone_q.parameters())  # BUG-LINE
        k_params = list(backbone_k.parameters()) + list(head_k.parameters())
        for pq, pk in zip(q_params, k_params):
            pk.mul_(M).add_(pq.detach(), alpha=1 - M)
        k = F.normalize(head_k(backbone_k(x2)), dim=1)
    logits = torch.cat([(q * k).sum(1, keepdim=True), q @ queue.T], 1) / TAU
    loss = F.cross_entropy(logits, torch.zeros(64, dtype=torch.long))
    opt.zero_grad()
    loss.backward()
    opt.step()
    queue = torch.cat([k, queue])[:512]
    if step % 50 == 0:
        print(f"step {step} infonce {loss.item():.4f}")
print("key head drift from init:", round((head_k[2].weight - head_k_init).norm().item(), 5))
with torch.no_grad():
    xa, _, ya = two_views(400)
    xb, _, yb = two_views(400)
    ea, eb = F.normalize(backbone_q(xa), dim=1), F.normalize(backbone_q(xb), dim=1)
    print("kNN probe acc:", round((yb[(ea @ eb.T).argmax(1)] == ya).float().mean().item(), 4))

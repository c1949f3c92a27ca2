"""Supervised contrastive (SupCon) metric learning on synthetic class-clustered vectors: each sample gets two stochastic augmentations (feature dropout plus jitter), both views go through the encoder and a projection head, embeddings are L2-normalised over the feature dimension, and the loss treats every other view with the same label as a positive, excluding self-similarity from the denominator with a mask and subtracting the row max for numerical stability; temperature 0.1. Unusual but correct: the batch is the concatenation of two views, positives are defined by labels rather than augmentation pairs, and the diagonal is masked deliberately.
Source: https://arxiv.org/abs/2004.11362
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
K, IN, B, TEMP = 8, 20, 128, 0.1
centres = torch.randn(K, IN) * 1.5
enc = nn.Sequential(nn.Linear(IN, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
proj = nn.Sequential(nn.Linear(64, 32))
optimizer = torch.optim.Adam(list(enc.parameters()) + list(proj.parameters()), lr=2e-3)


def augment(x):
    return F.dropout(x, 0.2, training=True) + 0.1 * torch.randn_like(x)


def supcon(z, y):
    sim = z @ z.T / TEMP
    sim = sim - sim.max(dim=1, keepdim=True).values.detach()
    self_mask = torch.eye(len(y), dtype=torch.bool)
    pos = (y[:, None] == y[None, :]) & ~self_mask
    exp = torch.exp(sim).masked_fill(self_mask, 0.0)
    log_prob = sim - torch.log(exp.sum(1, keepdim=True))
    return -(log_prob * pos).sum(1).div(pos.sum(1).clamp(min=1)).mean()


for step in range(40):
    y = torch.randint(0, K, (B,))
    x = centres[y] + 0.7 * torch.randn(B, IN)
    views = torch.cat([augment(x), augment(x)], 0)
    labels = torch.cat([y, y], 0)
    z = F.normalize(proj(enc(views)), dim=1)
    loss = supcon(z, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 5 == 0:
        print(f"step {step} supcon {loss.item():.4f}")

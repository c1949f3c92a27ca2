"""Train an embedding network for face-identification-style recognition with an ArcFace head on
synthetic identities (20 classes of 32-D samples). Both the embeddings and the class-centre weight
vectors are L2-normalised so logits are cosines; the additive angular margin m is added to the angle
of the target class only (computed stably from cos with clamp and the cos(theta + m) expansion,
with the easy-margin fallback when theta + m exceeds pi), and all logits are multiplied by the scale
s before the ordinary cross-entropy. Non-target logits are left as plain scaled cosines.

Source: https://arxiv.org/abs/1801.07698
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
K, D = 20, 32
centers = torch.randn(K, D)


def batch(n):
    y = torch.randint(0, K, (n,))
    return centers[y] + 0.8 * torch.randn(n, D), y


class ArcFace(nn.Module):
    def __init__(self, emb, k, s=16.0, m=0.3):
        super().__init__()
        self.W = nn.Parameter(torch.randn(k, emb) * 0.01)
        self.s, self.m = s, m
        self.th = math.cos(math.pi - m)
        self.mm = math.sin(math.pi - m) * m

    def forward(self, z, y):
        cos = F.linear(F.normalize(z), F.normalize(self.W)).clamp(-1 + 1e-7, 1 - 1e-7)
        sin = torch.sqrt(1.0 - cos.pow(2))
        phi = cos * math.cos(self.m) - sin * math.sin(self.m)
        phi = torch.where(cos > self.th, phi, cos - self.mm)
        onehot = F.one_hot(y, cos.size(1)).bool()
        return self.s * torch.where(onehot, phi, cos)


encoder = nn.Sequential(nn.Linear(D, 128), nn.ReLU(), nn.Linear(128, 64))
head = ArcFace(64, K)
opt = torch.optim.SGD(list(encoder.parameters()) + list(head.parameters()), lr=0.05, momentum=0.9)
for step in range(150):
    x, y = batch(128)
    loss = F.cross_entropy(head(encoder(x), y), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
with torch.no_grad():
    x, y = batch(1000)
    cos = F.normalize(encoder(x)) @ F.normalize(head.W).T
    acc = (cos.argmax(1) == y).float().mean().item()
print("final loss", round(loss.item(), 4), "nearest-centre accuracy", round(acc, 3))

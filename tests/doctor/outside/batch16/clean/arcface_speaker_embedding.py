"""Speaker-embedding network trained with an ArcFace (additive angular margin) head.

Unusual but correct: both the embeddings and the class-weight matrix are
L2-normalised so logits are cosines; the weight is stored (out_features,
in_features) like nn.Linear, so it is normalised along dim=1 (each class row),
which is the right axis for this layout. The margin m is added to the target
angle only (cos(theta + m)), with the usual fallback cos(theta) - m*sin(m) when
theta + m would exceed pi, and logits are scaled by s = 30. Evaluation uses plain
cosine similarity of the embeddings. The arcface-pytorch issue settles that for
an (out, in) weight, F.normalize(weight) (dim=1) is correct.

Source: https://github.com/ronghuaiyang/arcface-pytorch/issues/1
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_SPK, FEAT, EMB = 20, 24, 16
spk_mean = torch.randn(N_SPK, FEAT)


def make(n):
    y = torch.randint(0, N_SPK, (n,))
    return spk_mean[y] + 0.6 * torch.randn(n, FEAT), y


class ArcMargin(nn.Module):
    def __init__(self, d, n, s=30.0, m=0.3):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n, d) * 0.1)
        self.s, self.m = s, m
        self.th = math.cos(math.pi - m)
        self.mm = math.sin(math.pi - m) * m

    def forward(self, emb, y):
        cos = F.linear(F.normalize(emb, dim=1), F.normalize(self.weight, dim=1))
        sin = (1.0 - cos.pow(2)).clamp(min=1e-7).sqrt()
        phi = cos * math.cos(self.m) - sin * math.sin(self.m)
        phi = torch.where(cos > self.th, phi, cos - self.mm)
        onehot = F.one_hot(y, cos.shape[1]).float()
        return self.s * (onehot * phi + (1 - onehot) * cos)


net = nn.Sequential(nn.Linear(FEAT, 64), nn.ReLU(), nn.Linear(64, EMB))
head = ArcMargin(EMB, N_SPK)
opt = torch.optim.SGD([*net.parameters(), *head.parameters()], lr=0.05, momentum=0.9)
for step in range(150):
    x, y = make(128)
    loss = F.cross_entropy(head(net(x), y), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 30 == 0 or step == 149:
        print(f"step {step:3d} arcface CE {loss.item():.3f}")

with torch.no_grad():
    x, y = make(400)
    e = F.normalize(net(x), dim=1)
    sim = e @ e.T
    same = y[:, None] == y[None, :]
    eye = torch.eye(len(y), dtype=torch.bool)
    print("mean cos same speaker", sim[same & ~eye].mean().item(), "different", sim[~same].mean().item())

"""Metric learning with a triplet margin loss on synthetic 10-class vectors (class prototypes plus noise):
an MLP maps inputs to 16-d embeddings that are L2-normalised before distances are taken, and triplets are
sampled as (anchor, same-class positive, other-class negative). The normalisation is written as
F.normalize(emb, dim=0), which normalises each embedding *dimension* across the batch instead of each
embedding vector, so embeddings are not on the unit sphere and every sample's embedding depends on the rest
of the batch. F.normalize accepts any dim, so the run is silent.
Source: https://github.com/gabeur/mmt/issues/1
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
C, DIN = 10, 32
protos = torch.randn(C, DIN)


def sample(n):
    y = torch.randint(0, C, (n,))
    return protos[y] + 0.9 * torch.randn(n, DIN), y


class Embedder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(DIN, 64), nn.ReLU(), nn.Linear(64, 16))

    def forward(self, x):
        emb = self.net(x)
        return F.normalize(emb, dim=0)  # BUG-LINE


model = Embedder()
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
crit = nn.TripletMarginLoss(margin=0.3)
for step in range(200):
    ya = torch.randint(0, C, (64,))
    yn = (ya + torch.randint(1, C, (64,))) % C
    xa = protos[ya] + 0.9 * torch.randn(64, DIN)
    xp = protos[ya] + 0.9 * torch.randn(64, DIN)
    xn = protos[yn] + 0.9 * torch.randn(64, DIN)
    loss = crit(model(xa), model(xp), model(xn))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"step {step} triplet loss {loss.item():.4f}")
with torch.no_grad():
    xg, yg = sample(500)
    xq, yq = sample(200)
    eg = F.normalize(model.net(xg), dim=1)
    eq = F.normalize(model.net(xq), dim=1)
    nn_idx = (eq @ eg.T).argmax(1)
print("1-NN retrieval accuracy:", round((yg[nn_idx] == yq).float().mean().item(), 4))

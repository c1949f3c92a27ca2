"""Imbalanced tabular classifier: categorical embeddings, out-of-fold target encoding,
and a WeightedRandomSampler drawing WITH replacement.

Unusual but correct: the DataLoader uses WeightedRandomSampler(weights = 1/class
count per sample, num_samples=len(data), replacement=True), so minority rows
are repeated many times per epoch and majority rows are skipped; this is the
intended oversampling, and the loss is therefore plain unweighted CE (no double
correction). The high-cardinality column is target-encoded using statistics
from the OTHER fold only (no target leakage), with smoothing towards the prior.
Oversampling with WeightedRandomSampler as in this tutorial.

Source: https://androidkt.com/deal-with-an-imbalanced-dataset-using-weightedrandomsampler-in-pytorch/
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler

torch.manual_seed(0)
torch.set_num_threads(2)

N, N_CITY, N_DEV = 3000, 200, 5
city = torch.randint(0, N_CITY, (N,))
dev = torch.randint(0, N_DEV, (N,))
num = torch.randn(N, 4)
city_effect = torch.randn(N_CITY) * 1.5
logit = -3.0 + city_effect[city] + num[:, 0] + (dev == 2).float()
y = (torch.rand(N) < torch.sigmoid(logit)).long()
print("positive rate", y.float().mean().item())

# out-of-fold target encoding for the high-cardinality column
fold = torch.arange(N) % 2
prior, k = y.float().mean(), 10.0
te = torch.zeros(N)
for f in (0, 1):
    other = fold != f
    s = torch.zeros(N_CITY).index_add_(0, city[other], y[other].float())
    c = torch.zeros(N_CITY).index_add_(0, city[other], torch.ones(int(other.sum())))
    enc = (s + k * prior) / (c + k)
    te[fold == f] = enc[city[fold == f]]

counts = torch.bincount(y)
sample_w = (1.0 / counts.float())[y]
sampler = WeightedRandomSampler(sample_w, num_samples=N, replacement=True)
ds = TensorDataset(num, dev, te, y)
loader = DataLoader(ds, batch_size=128, sampler=sampler)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.dev_emb = nn.Embedding(N_DEV, 3)
        self.mlp = nn.Sequential(nn.Linear(4 + 3 + 1, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, num, dev, te):
        return self.mlp(torch.cat([num, self.dev_emb(dev), te[:, None]], 1))


model = Net()
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
for epoch in range(4):
    seen_pos = 0
    for xb, db, tb, yb in loader:
        loss = F.cross_entropy(model(xb, db, tb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        seen_pos += int(yb.sum())
    print(f"epoch {epoch} loss {loss.item():.4f} share of positives drawn {seen_pos / N:.2f}")

with torch.no_grad():
    pred = model(num, dev, te).argmax(1)
    rec = ((pred == 1) & (y == 1)).sum() / (y == 1).sum()
    print("balanced recall on positives", rec.item())

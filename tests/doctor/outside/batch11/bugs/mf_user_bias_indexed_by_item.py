"""Train a biased matrix-factorisation rating model (global mean + user bias + item bias + dot
product of embeddings) on synthetic explicit ratings where users differ strongly in how generously
they rate. The user-bias embedding is looked up with the item ids instead of the user ids. Because
there are fewer items than users the indices are always in range, so nothing fails; the "user bias"
becomes a second item bias and the per-user offset is never modelled.

Source: https://github.com/lenskit/lkpy/pull/265
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
U, I, K = 200, 80, 8
true_u = torch.randn(U, K) * 0.5
true_i = torch.randn(I, K) * 0.5
user_generosity = torch.randn(U) * 1.0
item_quality = torch.randn(I) * 0.5
users = torch.randint(0, U, (6000,))
items = torch.randint(0, I, (6000,))
ratings = (
    3.0
    + user_generosity[users]
    + item_quality[items]
    + (true_u[users] * true_i[items]).sum(1)
    + 0.1 * torch.randn(6000)
)


class BiasedMF(nn.Module):
    def __init__(self):
        super().__init__()
        self.P = nn.Embedding(U, K)
        self.Q = nn.Embedding(I, K)
        self.bu = nn.Embedding(U, 1)
        self.bi = nn.Embedding(I, 1)
        self.mu = nn.Parameter(torch.tensor(3.0))
        for e in (self.P, self.Q):
            nn.init.normal_(e.weight, std=0.1)
        nn.init.zeros_(self.bu.weight)
        nn.init.zeros_(self.bi.weight)

    def forward(self, u, i):
        bias_u = self.bu(i).squeeze(1)  # BUG-LINE
        return self.mu + bias_u + self.bi(i).squeeze(1) + (self.P(u) * self.Q(i)).sum(1)


model = BiasedMF()
opt = torch.optim.Adam(model.parameters(), lr=2e-2, weight_decay=1e-4)
train, test = slice(0, 5000), slice(5000, 6000)
for epoch in range(60):
    perm = torch.randperm(5000)
    for b in perm.split(1000):
        loss = F.mse_loss(model(users[b], items[b]), ratings[b])
        opt.zero_grad()
        loss.backward()
        opt.step()
with torch.no_grad():
    rmse = F.mse_loss(model(users[test], items[test]), ratings[test]).sqrt().item()
    corr = torch.corrcoef(torch.stack([model.bu.weight[:, 0], user_generosity]))[0, 1].item()
print(
    "final train mse",
    round(loss.item(), 4),
    "test rmse",
    round(rmse, 4),
    "corr(user bias, true generosity)",
    round(corr, 3),
)

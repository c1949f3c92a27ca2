"""Mult-VAE for collaborative filtering on synthetic implicit-feedback data.

The encoder outputs 2*d numbers per user that should be split into the mean
(first half) and the log-variance (second half). The log-variance is sliced
from the same first half as the mean, so logvar == mu for every user: the
posterior variance is tied to the posterior mean, the KL term and the sampling
noise are computed from the wrong numbers and half of the encoder output is
never used. Training runs and the ELBO decreases, but recommendation quality
(Recall@20 on held-out items) is worse.

Source: https://github.com/kaist-dmlab/TRAP/pull/1
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
rng = np.random.RandomState(0)

N_USERS, N_ITEMS, N_GROUPS, D = 600, 300, 6, 32
user_group = rng.randint(N_GROUPS, size=N_USERS)
item_group = rng.randint(N_GROUPS, size=N_ITEMS)
popularity = rng.rand(N_ITEMS) * 0.5 + 0.5
prob = np.where(user_group[:, None] == item_group[None, :], 0.25, 0.01) * popularity[None, :]
X = (rng.rand(N_USERS, N_ITEMS) < prob).astype(np.float32)
holdout = (rng.rand(N_USERS, N_ITEMS) < 0.2) & (X > 0)
train_X = torch.tensor(X * (~holdout))
test_X = torch.tensor(holdout.astype(np.float32))


class MultVAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Dropout(0.5), nn.Linear(N_ITEMS, 200), nn.Tanh(), nn.Linear(200, 2 * D))
        self.dec = nn.Sequential(nn.Linear(D, 200), nn.Tanh(), nn.Linear(200, N_ITEMS))

    def forward(self, x):
        x = F.normalize(x, dim=1)
        h = self.enc(x)
        mu = h[:, :D]
        logvar = h[:, :D]  # BUG-LINE
        if self.training:
            z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        else:
            z = mu
        return self.dec(z), mu, logvar


def recall_at_k(model, k=20):
    model.eval()
    with torch.no_grad():
        logits, _, _ = model(train_X)
        logits[train_X > 0] = -1e9
        top = logits.topk(k, dim=1).indices
        hits = test_X.gather(1, top).sum(1)
        denom = torch.clamp(test_X.sum(1), max=k)
        ok = denom > 0
    model.train()
    return (hits[ok] / denom[ok]).mean().item()


model = MultVAE()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
step, total_anneal = 0, 300
for epoch in range(60):
    perm = torch.randperm(N_USERS)
    for i in range(0, N_USERS, 100):
        x = train_X[perm[i : i + 100]]
        logits, mu, logvar = model(x)
        nll = -(F.log_softmax(logits, dim=1) * x).sum(1).mean()
        kl = (-0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(1)).mean()
        beta = min(0.2, 0.2 * step / total_anneal)
        loss = nll + beta * kl
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
    if epoch % 10 == 0 or epoch == 59:
        print(f"epoch {epoch:2d}  nll {nll.item():.3f}  kl {kl.item():.3f}  recall@20 {recall_at_k(model):.4f}")

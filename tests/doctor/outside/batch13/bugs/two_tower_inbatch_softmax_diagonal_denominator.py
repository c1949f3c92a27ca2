"""Two-tower retrieval model trained with an in-batch sampled softmax on synthetic
user-item interactions.

For user i the in-batch softmax should be exp(u_i . v_i) / sum_j exp(u_i . v_j)
over all items j of the batch. The implementation puts the positive scores of
all (user, item) pairs of the batch in the denominator instead,
sum_j exp(u_j . v_j), i.e. the diagonal of the score matrix. No user is ever
contrasted against other items, so the towers only learn to rank the batch's
positive pairs against each other. The loss decreases, but Recall@10 over the
catalogue stays close to popularity level.

Source: https://github.com/LongmaoTeamTf/deep_recommenders/issues/4
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
rng = np.random.RandomState(0)

N_USERS, N_ITEMS, DIM = 1000, 500, 16
true_u = rng.randn(N_USERS, 8)
true_i = rng.randn(N_ITEMS, 8)
scores = true_u @ true_i.T
interactions = []
for u in range(N_USERS):
    p = np.exp(scores[u] - scores[u].max())
    p /= p.sum()
    for it in rng.choice(N_ITEMS, size=12, replace=False, p=p):
        interactions.append((u, it))
interactions = np.array(interactions)
rng.shuffle(interactions)
n_test = len(interactions) // 10
test_pairs, train_pairs = interactions[:n_test], interactions[n_test:]


class Tower(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.emb = nn.Embedding(n, 32)
        self.mlp = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, DIM))

    def forward(self, ids):
        return F.normalize(self.mlp(self.emb(ids)), dim=-1)


user_tower, item_tower = Tower(N_USERS), Tower(N_ITEMS)
opt = torch.optim.Adam(list(user_tower.parameters()) + list(item_tower.parameters()), lr=3e-3)
temperature = 0.1
train_t = torch.tensor(train_pairs)
seen = torch.zeros(N_USERS, N_ITEMS, dtype=torch.bool)
seen[train_t[:, 0], train_t[:, 1]] = True


def recall_at_10():
    with torch.no_grad():
        s = user_tower(torch.arange(N_USERS)) @ item_tower(torch.arange(N_ITEMS)).T
        s[seen] = -1e9
        top = s.topk(10, dim=1).indices
        tu, ti = torch.tensor(test_pairs[:, 0]), torch.tensor(test_pairs[:, 1])
        return (top[tu] == ti[:, None]).any(1).float().mean().item()


for epoch in range(8):
    perm = torch.randperm(len(train_t))
    for start in range(0, len(train_t), 256):
        batch = train_t[perm[start : start + 256]]
        u = user_tower(batch[:, 0])
        v = item_tower(batch[:, 1])
        pos = (u * v).sum(-1) / temperature
        log_denominator = torch.logsumexp(pos, dim=0)  # BUG-LINE
        loss = -(pos - log_denominator).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"epoch {epoch}  loss {loss.item():.4f}  recall@10 {recall_at_10():.4f}")

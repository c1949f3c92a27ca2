"""Two-tower retrieval model (user tower / item tower) trained with in-batch negatives.

Unusual but correct: the score matrix is (B, B), row i = user i against every
item in the batch, and the cross-entropy target is torch.arange(B): the positive
item of user i sits on the diagonal and all other items of the batch act as
negatives. Labels that look like "class ids 0..B-1" are intended. Pairs are drawn
without duplicate items inside one batch so no in-batch negative is a false
negative. This is the MultipleNegativesRankingLoss construction discussed in
sentence-transformers (labels = range(len(scores))).

Source: https://github.com/huggingface/sentence-transformers/issues/1204
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_USERS, N_ITEMS, DIM, B = 300, 120, 32, 64
user_pref = torch.randint(0, N_ITEMS, (N_USERS,))


class Tower(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.emb = nn.Embedding(n, DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, DIM), nn.ReLU(), nn.Linear(DIM, DIM))

    def forward(self, ids):
        return F.normalize(self.mlp(self.emb(ids)), dim=-1)


users_t, items_t = Tower(N_USERS), Tower(N_ITEMS)
log_temp = nn.Parameter(torch.tensor(-2.0))
opt = torch.optim.Adam(list(users_t.parameters()) + list(items_t.parameters()) + [log_temp], lr=5e-3)

for step in range(120):
    perm = torch.randperm(N_USERS)
    chosen, seen = [], set()
    for u in perm.tolist():
        it = user_pref[u].item()
        if it not in seen:
            seen.add(it)
            chosen.append(u)
        if len(chosen) == B:
            break
    u = torch.tensor(chosen)
    q, p = users_t(u), items_t(user_pref[u])
    scores = q @ p.T / log_temp.exp().clamp(min=0.01)
    labels = torch.arange(scores.shape[0])
    loss = F.cross_entropy(scores, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 30 == 0 or step == 119:
        print(f"step {step:3d} in-batch CE {loss.item():.4f}")

with torch.no_grad():
    s = users_t(torch.arange(N_USERS)) @ items_t(torch.arange(N_ITEMS)).T
    hit = (s.topk(5, dim=1).indices == user_pref[:, None]).any(1).float().mean()
    print("recall@5 over full catalogue", hit.item())

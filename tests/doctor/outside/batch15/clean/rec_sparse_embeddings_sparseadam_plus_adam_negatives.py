"""Matrix-factorization recommender with sparse embeddings and negative sampling.

Source: https://raberrytv.wordpress.com/

The post ("PyTorch - Combining Dense And Sparse Gradients") shows that Adam refuses
sparse gradients and SparseAdam refuses dense ones, so a model with
nn.Embedding(sparse=True) plus dense layers needs two optimizers over disjoint
parameter lists, both zeroed and both stepped. This program does that: user/item
embeddings are sparse and go to SparseAdam, the dense MLP scorer goes to Adam.
Negatives are sampled uniformly at random each step (non-deterministic on purpose),
and the BPR-style loss compares each positive with its sampled negative. Embedding
rows not touched in a batch get no update in that step, by design.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_USERS, N_ITEMS, DIM = 300, 500, 16
user_taste = torch.randn(N_USERS, 4)
item_attr = torch.randn(N_ITEMS, 4)
affinity = user_taste @ item_attr.t()
pos_items = affinity.topk(20, dim=1).indices


class Recommender(nn.Module):
    def __init__(self):
        super().__init__()
        self.user = nn.Embedding(N_USERS, DIM, sparse=True)
        self.item = nn.Embedding(N_ITEMS, DIM, sparse=True)
        nn.init.normal_(self.user.weight, std=0.1)
        nn.init.normal_(self.item.weight, std=0.1)
        self.scorer = nn.Sequential(nn.Linear(2 * DIM, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, u, i):
        eu, ei = self.user(u), self.item(i)
        return (eu * ei).sum(-1) + self.scorer(torch.cat([eu, ei], -1)).squeeze(-1)


model = Recommender()
sparse_opt = torch.optim.SparseAdam(list(model.user.parameters()) + list(model.item.parameters()), lr=1e-2)
dense_opt = torch.optim.Adam(model.scorer.parameters(), lr=1e-3)

for step in range(1, 401):
    u = torch.randint(0, N_USERS, (256,))
    pos = pos_items[u, torch.randint(0, 20, (256,))]
    neg = torch.randint(0, N_ITEMS, (256,))
    loss = -F.logsigmoid(model(u, pos) - model(u, neg)).mean()
    sparse_opt.zero_grad()
    dense_opt.zero_grad()
    loss.backward()
    sparse_opt.step()
    dense_opt.step()
    if step % 50 == 0:
        with torch.no_grad():
            uu = torch.arange(50)
            scores = model(uu.repeat_interleave(N_ITEMS), torch.arange(N_ITEMS).repeat(50)).view(50, N_ITEMS)
            top = scores.topk(20, dim=1).indices
            hits = sum(len(set(top[k].tolist()) & set(pos_items[k].tolist())) for k in range(50)) / (50 * 20)
        print(f"step {step} bpr loss {loss.item():.4f} precision@20 {hits:.3f}")

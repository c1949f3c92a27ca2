"""BPR matrix factorisation with item/user embeddings created with sparse=True and optimised by
torch.optim.SparseAdam, while a small dense MLP "bias tower" over item side features is optimised by a second,
ordinary Adam optimizer. One backward pass produces sparse gradients for the embeddings and dense gradients
for the tower; both optimizers are zeroed and stepped every iteration. Negatives are sampled uniformly and the
loss is -log sigmoid(score(u, i+) - score(u, i-)).
Source: https://arxiv.org/abs/1205.2618
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
U, I, G, D = 200, 300, 5, 16
ug = torch.randint(0, G, (U,))
ig = torch.randint(0, G, (I,))
item_feat = F.one_hot(ig, G).float() + 0.1 * torch.randn(I, G)
inter = (ug[:, None] == ig[None, :]) & (torch.rand(U, I) < 0.3)
pairs = inter.nonzero()

user_emb = nn.Embedding(U, D, sparse=True)
item_emb = nn.Embedding(I, D, sparse=True)
nn.init.normal_(user_emb.weight, std=0.1)
nn.init.normal_(item_emb.weight, std=0.1)
tower = nn.Sequential(nn.Linear(G, 16), nn.ReLU(), nn.Linear(16, 1))
sparse_opt = torch.optim.SparseAdam(list(user_emb.parameters()) + list(item_emb.parameters()), lr=1e-2)
dense_opt = torch.optim.Adam(tower.parameters(), lr=1e-3)


def score(u, i):
    return (user_emb(u) * item_emb(i)).sum(1) + tower(item_feat[i]).squeeze(1)


for step in range(300):
    b = pairs[torch.randint(0, len(pairs), (256,))]
    u, pos = b[:, 0], b[:, 1]
    neg = torch.randint(0, I, (256,))
    loss = -F.logsigmoid(score(u, pos) - score(u, neg)).mean()
    sparse_opt.zero_grad()
    dense_opt.zero_grad()
    loss.backward()
    sparse_opt.step()
    dense_opt.step()
    if step % 100 == 0:
        print(f"step {step} bpr {loss.item():.4f} emb grad sparse={item_emb.weight.grad.is_sparse}")
with torch.no_grad():
    s = user_emb.weight @ item_emb.weight.T
    top = s.topk(10, 1).indices
    print("same-genre fraction in top-10:", round((ig[top] == ug[:, None]).float().mean().item(), 4))

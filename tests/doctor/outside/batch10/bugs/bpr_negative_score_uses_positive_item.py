"""Matrix-factorisation recommender trained with the BPR pairwise loss on synthetic implicit feedback (users
and items have latent "genres"; a user interacts with items of its genre). For each (user, positive item,
sampled negative item) triple the loss is -log sigmoid(score(u, i+) - score(u, i-)). The negative score is
computed as the dot product of the *positive item* embedding with the negative item embedding instead of the
user embedding with the negative item, so the user never gets pushed away from negatives and item-item
similarity gets penalised instead. Shapes match and the loss decreases, so nothing signals a problem.
Source: https://github.com/tanatosuu/GDE/issues/3
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
U, I, G, D = 200, 300, 5, 16
ug = torch.randint(0, G, (U,))
ig = torch.randint(0, G, (I,))
inter = (ug[:, None] == ig[None, :]) & (torch.rand(U, I) < 0.3)
pairs = inter.nonzero()
test_mask = torch.rand(len(pairs)) < 0.2
train_pairs, test_pairs = pairs[~test_mask], pairs[test_mask]
train_mat = torch.zeros(U, I, dtype=torch.bool)
train_mat[train_pairs[:, 0], train_pairs[:, 1]] = True

user_emb = nn.Embedding(U, D)
item_emb = nn.Embedding(I, D)
nn.init.normal_(user_emb.weight, std=0.1)
nn.init.normal_(item_emb.weight, std=0.1)
opt = torch.optim.Adam(list(user_emb.parameters()) + list(item_emb.parameters()), lr=1e-2)
for step in range(300):
    b = train_pairs[torch.randint(0, len(train_pairs), (256,))]
    u, pos = b[:, 0], b[:, 1]
    neg = torch.randint(0, I, (256,))
    user_e, pos_e, neg_e = user_emb(u), item_emb(pos), item_emb(neg)
    pos_score = (user_e * pos_e).sum(1)
    neg_score = (pos_e * neg_e).sum(1)  # BUG-LINE
    loss = (
        -F.logsigmoid(pos_score - neg_score).mean()
        + 1e-4 * (user_e.pow(2).sum() + pos_e.pow(2).sum() + neg_e.pow(2).sum()) / 256
    )
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 100 == 0:
        print(f"step {step} bpr loss {loss.item():.4f}")
with torch.no_grad():
    scores = user_emb.weight @ item_emb.weight.T
    scores[train_mat] = -1e9
    top = scores.topk(10, dim=1).indices
    test_mat = torch.zeros(U, I, dtype=torch.bool)
    test_mat[test_pairs[:, 0], test_pairs[:, 1]] = True
    hits = test_mat.gather(1, top).float().sum(1)
    recall = (hits / test_mat.float().sum(1).clamp(min=1)).mean()
print("recall@10:", round(recall.item(), 4))

"""Implicit-feedback two-tower recommender with sparse embedding gradients (correct, unusual).

The user and item id tables are nn.Embedding(sparse=True), so backward produces sparse
gradients for them. Dense Adam would either reject them or (with dense embeddings) keep moving
rows that were not in the batch through its momentum terms, so the tables are optimised by
torch.optim.SparseAdam while the dense MLP parameters use a second, ordinary AdamW optimizer.
Both optimizers are zeroed and stepped every iteration. The loss is in-batch sampled softmax.

Source: https://github.com/pytorch/pytorch/issues/18404
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_USERS, N_ITEMS, DIM = 500, 800, 32


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.user_emb = nn.Embedding(N_USERS, DIM, sparse=True)
        self.item_emb = nn.Embedding(N_ITEMS, DIM, sparse=True)
        self.user_mlp = nn.Sequential(nn.Linear(DIM, DIM), nn.ReLU(), nn.Linear(DIM, DIM))
        self.item_mlp = nn.Sequential(nn.Linear(DIM, DIM), nn.ReLU(), nn.Linear(DIM, DIM))
        nn.init.normal_(self.user_emb.weight, std=0.1)
        nn.init.normal_(self.item_emb.weight, std=0.1)

    def forward(self, users, items):
        u = F.normalize(self.user_mlp(self.user_emb(users)), dim=-1)
        i = F.normalize(self.item_mlp(self.item_emb(items)), dim=-1)
        return u, i


def make_interactions(n, g):
    user_group = torch.randint(0, 10, (N_USERS,), generator=g)
    users = torch.randint(0, N_USERS, (n,), generator=g)
    # item id i belongs to group i % 10; users interact with items of their own group
    items = user_group[users] + 10 * torch.randint(0, N_ITEMS // 10, (n,), generator=g)
    return users, items


def main():
    g = torch.Generator().manual_seed(0)
    users, items = make_interactions(6000, g)
    model = TwoTower()
    sparse_params = [model.user_emb.weight, model.item_emb.weight]
    dense_params = [p for n, p in model.named_parameters() if not n.endswith("_emb.weight")]
    opt_sparse = torch.optim.SparseAdam(sparse_params, lr=1e-2)
    opt_dense = torch.optim.AdamW(dense_params, lr=3e-3, weight_decay=1e-4)
    for step in range(120):
        idx = torch.randint(0, len(users), (128,), generator=g)
        u, i = model(users[idx], items[idx])
        logits = u @ i.t() / 0.1
        loss = F.cross_entropy(logits, torch.arange(len(idx)))
        opt_sparse.zero_grad()
        opt_dense.zero_grad()
        loss.backward()
        opt_sparse.step()
        opt_dense.step()
        if step % 30 == 0 or step == 119:
            print(f"step {step:3d} loss {loss.item():.4f} emb-grad sparse={model.user_emb.weight.grad.is_sparse}")


if __name__ == "__main__":
    main()

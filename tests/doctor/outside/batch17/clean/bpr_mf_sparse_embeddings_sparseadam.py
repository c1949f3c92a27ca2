"""Implicit-feedback matrix factorisation trained with the pairwise BPR loss on sparse gradients.

Unusual on purpose: user/item factors and item biases are nn.Embedding(sparse=True), so their
gradients are torch.sparse tensors that touch only the rows in the batch; they are optimised by
torch.optim.SparseAdam, while a small dense temperature scalar uses a separate Adam optimizer (two
optimizers, stepped together). The loss is -log sigmoid(score_pos - score_neg): each example
compares two items of one user, and negatives are sampled uniformly, so a sampled "negative" can
occasionally be a positive (accepted BPR practice). No weight decay is used on sparse params;
regularisation is an explicit L2 term on the looked-up rows only. Modelled on Spotlight's
BilinearNet, whose sparse=True option enables sparse gradients for the embedding layers.

Source: https://maciejkula.github.io/spotlight/factorization/representations.html
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_USERS, N_ITEMS, DIM = 300, 500, 16


def make_interactions():
    u_lat = torch.randn(N_USERS, 4)
    i_lat = torch.randn(N_ITEMS, 4)
    pop = torch.linspace(1.0, -1.0, N_ITEMS)
    scores = u_lat @ i_lat.T + pop
    k = 20
    top = scores.topk(k, dim=1).indices
    users = torch.arange(N_USERS).repeat_interleave(k)
    items = top.reshape(-1)
    perm = torch.randperm(len(users))
    users, items = users[perm], items[perm]
    n_test = N_USERS
    return (users[n_test:], items[n_test:]), (users[:n_test], items[:n_test])


class BPRMF(nn.Module):
    def __init__(self):
        super().__init__()
        self.user = nn.Embedding(N_USERS, DIM, sparse=True)
        self.item = nn.Embedding(N_ITEMS, DIM, sparse=True)
        self.item_bias = nn.Embedding(N_ITEMS, 1, sparse=True)
        nn.init.normal_(self.user.weight, std=0.1)
        nn.init.normal_(self.item.weight, std=0.1)
        nn.init.zeros_(self.item_bias.weight)
        self.log_scale = nn.Parameter(torch.zeros(()))

    def score(self, u, i):
        return self.log_scale.exp() * (self.user(u) * self.item(i)).sum(-1) + self.item_bias(i).squeeze(-1)


def main():
    (tu, ti), (vu, vi) = make_interactions()
    model = BPRMF()
    sparse_params = [model.user.weight, model.item.weight, model.item_bias.weight]
    opt_sparse = torch.optim.SparseAdam(sparse_params, lr=1e-2)
    opt_dense = torch.optim.Adam([model.log_scale], lr=1e-2)
    for step in range(300):
        idx = torch.randint(0, len(tu), (256,))
        u, pos = tu[idx], ti[idx]
        neg = torch.randint(0, N_ITEMS, (256,))
        diff = model.score(u, pos) - model.score(u, neg)
        reg = 1e-4 * (model.user(u).pow(2).sum() + model.item(pos).pow(2).sum() + model.item(neg).pow(2).sum())
        loss = -F.logsigmoid(diff).mean() + reg / len(u)
        opt_sparse.zero_grad()
        opt_dense.zero_grad()
        loss.backward()
        opt_sparse.step()
        opt_dense.step()
        if step % 50 == 0 or step == 299:
            with torch.no_grad():
                neg_v = torch.randint(0, N_ITEMS, (len(vu),))
                auc = (model.score(vu, vi) > model.score(vu, neg_v)).float().mean().item()
            print(
                f"step {step:3d} bpr_loss {loss.item():.4f} held-out AUC {auc:.3f} "
                f"grad_is_sparse {model.item.weight.grad.is_sparse}"
            )


if __name__ == "__main__":
    main()

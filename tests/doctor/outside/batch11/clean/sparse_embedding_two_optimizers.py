"""A NeuMF-style click model (dot-product term plus MLP tower) with large user and item embedding tables created
with sparse=True, so their gradients are sparse tensors touching only the rows in the batch. Sparse
gradients are not supported by Adam, so, as the PyTorch documentation recommends, the embedding
tables are optimised with torch.optim.SparseAdam and the dense MLP tower with a separate Adam. Both
optimisers are zeroed and stepped every iteration over disjoint parameter sets; negatives are
sampled uniformly and trained with binary cross-entropy.

Source: https://pytorch.org/docs/stable/generated/torch.optim.SparseAdam.html
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
U, I, K = 600, 300, 16
user_taste = torch.randn(U, 4)
item_attr = torch.randn(I, 4)


def batch(n):
    u = torch.randint(0, U, (n,))
    i = torch.randint(0, I, (n,))
    y = ((user_taste[u] * item_attr[i]).sum(1) > 0.5).float()
    return u, i, y


class NCF(nn.Module):
    def __init__(self):
        super().__init__()
        self.user = nn.Embedding(U, K, sparse=True)
        self.item = nn.Embedding(I, K, sparse=True)
        self.mlp = nn.Sequential(nn.Linear(2 * K, 64), nn.ReLU(), nn.Linear(64, 1))
        nn.init.normal_(self.user.weight, std=0.1)
        nn.init.normal_(self.item.weight, std=0.1)

    def forward(self, u, i):
        pu, qi = self.user(u), self.item(i)
        return (pu * qi).sum(1) + self.mlp(torch.cat([pu, qi], 1)).squeeze(1)


model = NCF()
sparse_opt = torch.optim.SparseAdam(list(model.user.parameters()) + list(model.item.parameters()), lr=1e-2)
dense_opt = torch.optim.Adam(model.mlp.parameters(), lr=1e-3)
for step in range(200):
    u, i, y = batch(512)
    loss = F.binary_cross_entropy_with_logits(model(u, i), y)
    sparse_opt.zero_grad()
    dense_opt.zero_grad()
    loss.backward()
    sparse_opt.step()
    dense_opt.step()
    if step == 0:
        first = loss.item()
print(
    "first loss",
    round(first, 4),
    "final loss",
    round(loss.item(), 4),
    "user grad is sparse:",
    model.user.weight.grad.is_sparse,
)

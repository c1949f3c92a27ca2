"""Two-layer graph convolutional network written in plain torch (dense adjacency) for semi-supervised node classification on a synthetic stochastic-block-model graph. The propagation matrix should be D~^-1/2 (A + I) D~^-1/2 with D~ the degree matrix of A + I. The degree vector is computed from A before the self-loops are added, so the normalisation no longer matches the matrix it normalises: rows of low-degree nodes are scaled up (a node with one neighbour gets a self-weight of 1 instead of 1/2), and the operator's spectral radius exceeds 1. Everything trains and the accuracy is reasonable, so the mistake is silent; it affects every forward pass.
Source: https://github.com/pyg-team/pytorch_geometric/issues/48
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
N, K, FEAT = 300, 3, 16
labels = torch.randint(0, K, (N,))
p = torch.where(labels[:, None] == labels[None, :], 0.05, 0.005)
A = (torch.rand(N, N) < p).float()
A = torch.triu(A, 1)
A = A + A.T
ring = torch.roll(torch.eye(N), 1, dims=1)
A = ((A + ring + ring.T) > 0).float()
X = torch.randn(N, FEAT) + 0.5 * F.one_hot(labels, FEAT).float()
train_mask = torch.rand(N) < 0.2

A_hat = A + torch.eye(N)
deg = A.sum(dim=1)  # BUG-LINE
d_inv_sqrt = deg.pow(-0.5)
A_norm = d_inv_sqrt[:, None] * A_hat * d_inv_sqrt[None, :]


class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(FEAT, 32)
        self.l2 = nn.Linear(32, K)

    def forward(self, x, adj):
        h = F.relu(adj @ self.l1(x))
        h = F.dropout(h, 0.5, self.training)
        return adj @ self.l2(h)


model = GCN()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
for epoch in range(40):
    model.train()
    out = model(X, A_norm)
    loss = F.cross_entropy(out[train_mask], labels[train_mask])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if epoch % 10 == 0:
        print(f"epoch {epoch} loss {loss.item():.4f}")

model.eval()
with torch.no_grad():
    acc = (model(X, A_norm).argmax(1)[~train_mask] == labels[~train_mask]).float().mean()
print("spectral radius", round(torch.linalg.eigvalsh(A_norm).abs().max().item(), 4), "test acc", round(acc.item(), 4))

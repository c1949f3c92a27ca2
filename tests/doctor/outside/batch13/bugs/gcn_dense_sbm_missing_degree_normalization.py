"""Two-layer GCN written by hand (dense adjacency) for semi-supervised node classification
on a degree-corrected stochastic block model graph.

The propagation matrix is built as A + I and used directly. The symmetric
degree normalisation D^-1/2 (A + I) D^-1/2 of Kipf & Welling is missing, so each
layer sums instead of averaging neighbour features: hub nodes get activations
tens of times larger than low-degree nodes and the scale compounds over layers.
Training loss still decreases, but test accuracy is clearly lower.

Source: https://github.com/dmlc/dgl/pull/249
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
rng = np.random.RandomState(0)

N, C, F_IN = 800, 4, 32
labels_np = rng.randint(C, size=N)
theta = rng.pareto(2.0, size=N) + 0.3
p = np.where(labels_np[:, None] == labels_np[None, :], 0.02, 0.004) * theta[:, None] * theta[None, :]
A_np = (rng.rand(N, N) < np.clip(p, 0, 1)).astype(np.float32)
A_np = np.triu(A_np, 1)
A_np = A_np + A_np.T
centers = rng.randn(C, F_IN)
X_np = centers[labels_np] * 0.6 + rng.randn(N, F_IN) * 1.5

A = torch.tensor(A_np)
X = torch.tensor(X_np, dtype=torch.float32)
y = torch.tensor(labels_np)
perm = torch.randperm(N)
train_idx, test_idx = perm[:80], perm[200:]

I = torch.eye(N)
A_tilde = A + I
deg = A_tilde.sum(1)
d_inv_sqrt = deg.pow(-0.5)
A_sym = d_inv_sqrt[:, None] * A_tilde * d_inv_sqrt[None, :]
A_prop = A_tilde  # BUG-LINE


class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = nn.Linear(F_IN, 32)
        self.w2 = nn.Linear(32, C)

    def forward(self, x, a):
        h = F.relu(a @ self.w1(x))
        h = F.dropout(h, 0.5, self.training)
        return a @ self.w2(h)


model = GCN()
opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
for epoch in range(200):
    model.train()
    out = model(X, A_prop)
    loss = F.cross_entropy(out[train_idx], y[train_idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if epoch % 40 == 0 or epoch == 199:
        model.eval()
        with torch.no_grad():
            pred = model(X, A_prop).argmax(1)
        acc = (pred[test_idx] == y[test_idx]).float().mean().item()
        print(f"epoch {epoch:3d}  train loss {loss.item():.4f}  test acc {acc:.3f}")
print(f"mean degree {A.sum(1).mean().item():.1f}  max degree {A.sum(1).max().item():.0f}")

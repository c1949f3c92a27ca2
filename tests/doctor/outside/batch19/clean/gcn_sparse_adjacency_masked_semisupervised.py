"""Semi-supervised node classification with a hand-written GCN on a sparse normalised adjacency
(correct, unusual: the loss only sees a small labelled mask, and propagation uses torch.sparse).

The propagation matrix D^-1/2 (A + I) D^-1/2 is built as a sparse COO tensor (self-loops added
before computing degrees) and applied with torch.sparse.mm. All nodes go through the forward
pass, but the cross-entropy is computed only on the 5% of nodes in idx_train; unlabelled nodes
still shape the representation through message passing. Validation / test masks are disjoint.

Source: https://github.com/tkipf/pygcn/issues/73
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N, FEAT, CLASSES = 400, 16, 4


def sbm(g):
    y = torch.randint(0, CLASSES, (N,), generator=g)
    same = (y[:, None] == y[None]).float()
    dense = (torch.rand(N, N, generator=g) < 0.05 * same + 0.004 * (1 - same)).float()
    dense = torch.triu(dense, 1)
    dense = dense + dense.t()
    x = 0.3 * torch.randn(CLASSES, FEAT, generator=g)[y] + torch.randn(N, FEAT, generator=g)
    return x, dense.nonzero().t(), y


def normalized_sparse_adj(edge_index, n):
    loops = torch.arange(n).repeat(2, 1)
    ei = torch.cat([edge_index, loops], dim=1)
    w = torch.ones(ei.shape[1])
    deg = torch.zeros(n).index_add_(0, ei[0], w)
    norm = deg[ei[0]].pow(-0.5) * deg[ei[1]].pow(-0.5)
    return torch.sparse_coo_tensor(ei, norm, (n, n), check_invariants=False).coalesce()


class SparseGCN(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.lin1, self.lin2 = nn.Linear(FEAT, hidden), nn.Linear(hidden, CLASSES)

    def forward(self, x, adj):
        h = F.relu(torch.sparse.mm(adj, self.lin1(x)))
        h = F.dropout(h, 0.5, self.training)
        return torch.sparse.mm(adj, self.lin2(h))


def main():
    g = torch.Generator().manual_seed(0)
    x, edge_index, y = sbm(g)
    adj = normalized_sparse_adj(edge_index, N)
    perm = torch.randperm(N, generator=g)
    idx_train, idx_val, idx_test = perm[:20], perm[20:120], perm[120:]
    model = SparseGCN()
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    for epoch in range(100):
        model.train()
        out = model(x, adj)
        loss = F.cross_entropy(out[idx_train], y[idx_train])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if epoch % 20 == 0 or epoch == 99:
            model.eval()
            with torch.no_grad():
                pred = model(x, adj).argmax(1)
            va = (pred[idx_val] == y[idx_val]).float().mean().item()
            te = (pred[idx_test] == y[idx_test]).float().mean().item()
            print(f"epoch {epoch:3d} loss {loss.item():.4f} val {va:.3f} test {te:.3f}")


if __name__ == "__main__":
    main()

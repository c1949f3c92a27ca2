"""Two-layer GCN written by hand with a dense "renormalised" adjacency (Kipf & Welling).

The data loader already symmetrises the graph and adds the identity (adj = A + A^T + I), and
the model's preprocessing (written to follow the paper, A_hat = D^-1/2 (A + I) D^-1/2) adds
the identity a second time before computing degrees. Every node therefore weights its own
features with 2 instead of 1 relative to its neighbours, which is strongest for low-degree
nodes: the layer leans on the node's own noisy features and under-uses the graph. Nothing
errors and the loss falls normally; the accuracy on unlabelled nodes is simply lower.

Source: https://github.com/Tiiiger/SGC/issues/23
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N, FEAT, CLASSES = 300, 16, 4


def stochastic_block_graph(g):
    y = torch.randint(0, CLASSES, (N,), generator=g)
    same = (y[:, None] == y[None, :]).float()
    p = 0.06 * same + 0.005 * (1 - same)
    adj = (torch.rand(N, N, generator=g) < p).float()
    adj = torch.triu(adj, 1)
    adj = adj + adj.t() + torch.eye(N)
    centers = torch.randn(CLASSES, FEAT, generator=g)
    x = 0.35 * centers[y] + torch.randn(N, FEAT, generator=g)  # weak, noisy node features
    return x, adj, y


def normalize_adjacency(adj):
    adj = adj + torch.eye(adj.shape[0])  # BUG-LINE
    deg = adj.sum(1)
    d_inv_sqrt = deg.pow(-0.5)
    d_inv_sqrt[torch.isinf(d_inv_sqrt)] = 0.0
    return d_inv_sqrt[:, None] * adj * d_inv_sqrt[None, :]


class GraphConvolution(nn.Module):
    def __init__(self, fin, fout):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(fin, fout))
        self.bias = nn.Parameter(torch.zeros(fout))
        nn.init.xavier_uniform_(self.weight)

    def forward(self, x, a_hat):
        return a_hat @ (x @ self.weight) + self.bias


class GCN(nn.Module):
    def __init__(self, hidden=32, dropout=0.5):
        super().__init__()
        self.gc1 = GraphConvolution(FEAT, hidden)
        self.gc2 = GraphConvolution(hidden, CLASSES)
        self.dropout = dropout

    def forward(self, x, a_hat):
        x = F.relu(self.gc1(x, a_hat))
        x = F.dropout(x, self.dropout, self.training)
        return self.gc2(x, a_hat)


def main():
    g = torch.Generator().manual_seed(0)
    x, adj, y = stochastic_block_graph(g)
    a_hat = normalize_adjacency(adj)
    perm = torch.randperm(N, generator=g)
    idx_train, idx_test = perm[:40], perm[100:]
    model = GCN()
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    for epoch in range(150):
        model.train()
        out = model(x, a_hat)
        loss = F.cross_entropy(out[idx_train], y[idx_train])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if epoch % 30 == 0 or epoch == 149:
            model.eval()
            with torch.no_grad():
                acc = (model(x, a_hat)[idx_test].argmax(1) == y[idx_test]).float().mean().item()
            print(f"epoch {epoch:3d} loss {loss.item():.4f} test acc {acc:.3f}")


if __name__ == "__main__":
    main()

"""Hand-written two-layer GCN on a synthetic two-community graph.

Source: https://github.com/rusty1s/pytorch_scatter/issues/185

The thread explains that GNN aggregation can be done either with scatter-style
ops over an edge index or with a sparse matrix multiplication against the
(normalized) adjacency, and that both are valid. This program uses both on purpose:
the first layer aggregates messages with index_add_ over the edge list (duplicate
destination indices are summed, which is what index_add_ does), the second multiplies
by a torch.sparse_coo_tensor adjacency. Only 10% of nodes are labelled, so the loss is
computed on a train mask and all other nodes receive no direct supervision; accuracy
is reported on the unlabelled nodes.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N, D = 400, 16
labels = torch.arange(N) % 2
p_in, p_out = 0.05, 0.005
same = labels[:, None] == labels[None, :]
prob = torch.where(same, torch.tensor(p_in), torch.tensor(p_out))
adj = (torch.rand(N, N) < prob).float().triu(1)
adj = adj + adj.t() + torch.eye(N)
src, dst = adj.nonzero(as_tuple=True)
deg = adj.sum(1)
edge_w = (deg[src] * deg[dst]).rsqrt()
A_sparse = torch.sparse_coo_tensor(torch.stack([dst, src]), edge_w, (N, N), check_invariants=True).coalesce()

centers = torch.randn(2, D)
x = centers[labels] * 0.3 + torch.randn(N, D)
train_mask = torch.rand(N) < 0.1


class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin1 = nn.Linear(D, 32)
        self.lin2 = nn.Linear(32, 2)

    def forward(self, x):
        h = self.lin1(x)
        msg = h[src] * edge_w.unsqueeze(1)
        agg = torch.zeros_like(h).index_add_(0, dst, msg)
        h = F.relu(agg)
        h = F.dropout(h, 0.3, self.training)
        h = self.lin2(h)
        return torch.sparse.mm(A_sparse, h)


model = GCN()
opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=5e-4)
for epoch in range(1, 151):
    model.train()
    out = model(x)
    loss = F.cross_entropy(out[train_mask], labels[train_mask])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if epoch % 25 == 0:
        model.eval()
        with torch.no_grad():
            pred = model(x).argmax(1)
        acc = (pred[~train_mask] == labels[~train_mask]).float().mean()
        print(f"epoch {epoch} loss {loss.item():.4f} unlabelled acc {acc.item():.3f}")

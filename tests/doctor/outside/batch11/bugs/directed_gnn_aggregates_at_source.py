"""Train a two-layer message-passing GNN written with index_add_ on a random directed graph where
each node's label is determined by the features of the nodes that point TO it (its in-neighbours).
edge_index follows the source->target convention (row 0 = source, row 1 = target), but the
aggregation scatters each message into edge_index[0], i.e. messages from targets are summed at the
source node. On a directed graph this propagates information against the edge direction, so each
node sees its out-neighbours instead of its in-neighbours. Shapes are identical, nothing errors.

Source: https://github.com/pyg-team/pytorch_geometric/issues/126
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
N, E, D = 300, 1200, 8
src = torch.randint(0, N, (E,))
dst = torch.randint(0, N, (E,))
edge_index = torch.stack([src, dst])
x = torch.randn(N, D)
in_sum = torch.zeros(N, D).index_add_(0, dst, x[src])
y = (in_sum[:, 0] > 0).long()


class MPLayer(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.msg = nn.Linear(d_in, d_out)
        self.self_loop = nn.Linear(d_in, d_out)

    def forward(self, h, edge_index):
        s, t = edge_index
        m = self.msg(h[s])
        agg = torch.zeros(h.size(0), m.size(1)).index_add_(0, s, m)  # BUG-LINE
        return self.self_loop(h) + agg


class GNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = MPLayer(D, 32)
        self.l2 = MPLayer(32, 2)

    def forward(self, h, ei):
        return self.l2(F.relu(self.l1(h, ei)), ei)


model = GNN()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
train = torch.arange(N) < 200
for step in range(100):
    out = model(x, edge_index)
    loss = F.cross_entropy(out[train], y[train])
    opt.zero_grad()
    loss.backward()
    opt.step()
with torch.no_grad():
    acc = (model(x, edge_index).argmax(1) == y)[~train].float().mean()
print("final loss", round(loss.item(), 4), "held-out node accuracy", round(acc.item(), 3))

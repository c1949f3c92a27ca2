"""Single-head graph attention network (dense features, edge list) on a directed graph.

Messages flow along edge_index[0] (source) -> edge_index[1] (target) and are summed at
the target node, so the attention coefficients of all edges arriving at one target must
be normalised together (softmax grouped by target).

Bug: the edge softmax is grouped by the source index instead of the target index. On a
directed graph the weights arriving at a node then no longer sum to one (some nodes get
huge sums, others almost nothing), so aggregation is wrong. Training still runs and the
loss still goes down somewhat; no error is raised. The report points out the same thing
in a GATConv message function (normalised over edge_index[0] instead of edge_index[1]),
which only happens to be harmless on undirected graphs.

Source: https://github.com/snap-stanford/pretrain-gnns/issues/49
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N, F_IN, HID, C = 300, 16, 32, 3

# directed graph: each node receives edges from 4 random nodes, mostly of its own class
labels = torch.randint(0, C, (N,))
src_list, dst_list = [], []
for v in range(N):
    same = (labels == labels[v]).nonzero().squeeze(1)
    for _ in range(4):
        if torch.rand(()) < 0.8:
            u = same[torch.randint(0, len(same), ())]
        else:
            u = torch.randint(0, N, ())
        src_list.append(int(u))
        dst_list.append(v)
# a few hub nodes send many extra edges
hubs = torch.randint(0, N, (10,))
for h in hubs.tolist():
    for v in torch.randint(0, N, (25,)).tolist():
        src_list.append(h)
        dst_list.append(v)
loops = list(range(N))
edge_index = torch.tensor([src_list + loops, dst_list + loops])

centers = torch.randn(C, F_IN)
x = centers[labels] * 0.4 + torch.randn(N, F_IN)
perm = torch.randperm(N)
train_idx, test_idx = perm[:90], perm[150:]


def edge_softmax(scores, group, num_nodes):
    gmax = torch.full((num_nodes,), float("-inf")).scatter_reduce(0, group, scores, reduce="amax", include_self=True)
    e = (scores - gmax[group]).exp()
    denom = torch.zeros(num_nodes).index_add_(0, group, e)
    return e / (denom[group] + 1e-16)


class GATLayer(nn.Module):
    def __init__(self, fin, fout):
        super().__init__()
        self.lin = nn.Linear(fin, fout, bias=False)
        self.a_src = nn.Parameter(torch.randn(fout) * 0.1)
        self.a_dst = nn.Parameter(torch.randn(fout) * 0.1)
        self.bias = nn.Parameter(torch.zeros(fout))

    def forward(self, x, edge_index):
        src, dst = edge_index
        h = self.lin(x)
        score = F.leaky_relu((h * self.a_src).sum(-1)[src] + (h * self.a_dst).sum(-1)[dst], 0.2)
        alpha = edge_softmax(score, src, x.size(0))  # BUG-LINE
        out = torch.zeros_like(h).index_add_(0, dst, alpha.unsqueeze(-1) * h[src])
        return out + self.bias


class GAT(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = GATLayer(F_IN, HID)
        self.l2 = GATLayer(HID, C)

    def forward(self, x, ei):
        h = F.elu(self.l1(F.dropout(x, 0.2, self.training), ei))
        return self.l2(F.dropout(h, 0.2, self.training), ei)


model = GAT()
opt = torch.optim.Adam(model.parameters(), lr=5e-3, weight_decay=5e-4)
for epoch in range(120):
    model.train()
    out = model(x, edge_index)
    loss = F.cross_entropy(out[train_idx], labels[train_idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if epoch % 20 == 0 or epoch == 119:
        model.eval()
        with torch.no_grad():
            pred = model(x, edge_index).argmax(-1)
            acc = (pred[test_idx] == labels[test_idx]).float().mean().item()
        print(f"epoch {epoch:3d}  loss {loss.item():.4f}  test acc {acc:.3f}")

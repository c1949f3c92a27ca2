"""Hand-written single-head graph attention network (GAT) for node classification on a synthetic directed
stochastic-block-model graph. Messages flow along edges src -> dst and are summed at the destination node, so
the attention coefficients must be normalised with a softmax over the incoming edges of each destination.
The segment softmax is grouped by the source index instead, so for every node the coefficients of its
*outgoing* edges sum to one while the weights a node actually aggregates do not. The tensors have identical
shapes either way and training proceeds without complaint.
Source: https://github.com/pyg-team/pytorch_geometric/issues/224
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
N, C, FEAT = 300, 3, 16
labels = torch.randint(0, C, (N,))
p_in, p_out = 0.06, 0.01
prob = torch.where(labels[:, None] == labels[None, :], p_in, p_out)
adj = (torch.rand(N, N) < prob).float()
adj.fill_diagonal_(1.0)
src, dst = adj.nonzero(as_tuple=True)
x = torch.randn(N, FEAT) + 0.4 * F.one_hot(labels, FEAT).float()
train_mask = torch.rand(N) < 0.3


def segment_softmax(score, group, n):
    m = torch.full((n,), -1e9).scatter_reduce(0, group, score, reduce="amax", include_self=True)
    e = torch.exp(score - m[group])
    s = torch.zeros(n).index_add(0, group, e)
    return e / s[group]


class GATLayer(nn.Module):
    def __init__(self, fin, fout):
        super().__init__()
        self.lin = nn.Linear(fin, fout, bias=False)
        self.a_src = nn.Parameter(torch.randn(fout) * 0.1)
        self.a_dst = nn.Parameter(torch.randn(fout) * 0.1)

    def forward(self, h):
        h = self.lin(h)
        score = F.leaky_relu((h * self.a_src).sum(1)[src] + (h * self.a_dst).sum(1)[dst], 0.2)
        group = src  # BUG-LINE
        alpha = segment_softmax(score, group, N)
        return torch.zeros_like(h).index_add(0, dst, alpha.unsqueeze(1) * h[src])


class GAT(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = GATLayer(FEAT, 32)
        self.l2 = GATLayer(32, C)

    def forward(self, h):
        return self.l2(F.elu(self.l1(h)))


model = GAT()
opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=5e-4)
for epoch in range(60):
    out = model(x)
    loss = F.cross_entropy(out[train_mask], labels[train_mask])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if epoch % 20 == 0:
        print(f"epoch {epoch} loss {loss.item():.4f}")
with torch.no_grad():
    pred = model(x).argmax(1)
print("test acc:", round((pred[~train_mask] == labels[~train_mask]).float().mean().item(), 4))

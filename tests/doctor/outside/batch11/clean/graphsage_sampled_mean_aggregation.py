"""GraphSAGE on a synthetic stochastic-block-model graph (4 communities, noisy node features), trained
on a subset of labelled nodes. Neighbourhoods are subsampled per layer with a fixed fan-out
(each in-edge of a target node kept with probability fanout/degree), messages from sampled in-neighbours are averaged at the
target node with index_add_ and a degree count (isolated nodes get a zero mean), and each layer
concatenates the node's own representation with the neighbour mean before a linear map and L2
normalisation, as in the paper. Sampling happens inside the training loop, so each step sees a
different subgraph; evaluation uses the full neighbourhood.

Source: https://arxiv.org/abs/1706.02216
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
N, C, D = 400, 4, 16
labels = torch.randint(0, C, (N,))
p_in, p_out = 0.05, 0.005
prob = torch.where(labels[:, None] == labels[None, :], p_in, p_out)
adj = torch.rand(N, N) < prob
adj = adj | adj.T
adj.fill_diagonal_(False)
src, dst = adj.nonzero(as_tuple=True)
x = F.one_hot(labels, C).float() @ torch.randn(C, D) * 0.6 + torch.randn(N, D)


def sample_edges(src, dst, fanout):
    deg = torch.zeros(N).index_add_(0, dst, torch.ones(dst.numel()))
    keep = torch.rand(dst.numel()) < (fanout / deg[dst]).clamp(max=1.0)
    return src[keep], dst[keep]


class SAGELayer(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.lin = nn.Linear(2 * i, o)

    def forward(self, h, s, t):
        agg = torch.zeros_like(h).index_add_(0, t, h[s])
        deg = torch.zeros(h.size(0)).index_add_(0, t, torch.ones(t.numel())).clamp(min=1)
        out = self.lin(torch.cat([h, agg / deg[:, None]], 1))
        return F.normalize(out, dim=1)


class SAGE(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = SAGELayer(D, 64), SAGELayer(64, 64)
        self.cls = nn.Linear(64, C)

    def forward(self, h, e1, e2):
        h = F.relu(self.l1(h, *e1))
        return self.cls(self.l2(h, *e2))


model = SAGE()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
train = torch.rand(N) < 0.3
for step in range(30):
    e1, e2 = sample_edges(src, dst, 10), sample_edges(src, dst, 5)
    loss = F.cross_entropy(model(x, e1, e2)[train] * 5, labels[train])
    opt.zero_grad()
    loss.backward()
    opt.step()
with torch.no_grad():
    acc = (model(x, (src, dst), (src, dst)).argmax(1) == labels)[~train].float().mean().item()
print("final loss", round(loss.item(), 4), "test accuracy", round(acc, 3))

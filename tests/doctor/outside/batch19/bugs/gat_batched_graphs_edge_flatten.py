"""Hand-written multi-head GAT layer on a batch of small graphs stored as dense adjacency tensors.

To compute attention logits for every edge, node features are flattened to (batch*num_nodes, F)
and the edge list from adj.nonzero() (columns: graph, src, dst) is mapped to flat row indices.
The offset per graph was computed with the batch size instead of the number of nodes per graph,
so (whenever batch_size != num_nodes) the attention logit of an edge is computed from the features
of nodes in other graphs / other positions. Nothing crashes (indices stay in range) and the loss
still falls because messages themselves are aggregated from the right neighbours, but the
attention weights are essentially noise.

Source: https://github.com/phlippe/uvadlc_notebooks/issues/5
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

NUM_GRAPHS = 256
NUM_NODES = 12
BATCH_SIZE = 8
FEAT = 8
CLASSES = 3


class GATLayer(nn.Module):
    def __init__(self, c_in, c_out, num_heads=2, alpha=0.2):
        super().__init__()
        self.num_heads = num_heads
        self.c_out = c_out // num_heads
        self.projection = nn.Linear(c_in, self.c_out * num_heads)
        self.a = nn.Parameter(torch.empty(num_heads, 2 * self.c_out))
        self.leakyrelu = nn.LeakyReLU(alpha)
        nn.init.xavier_uniform_(self.projection.weight, gain=1.414)
        nn.init.xavier_uniform_(self.a.data, gain=1.414)

    def forward(self, node_feats, adj_matrix):
        batch_size, num_nodes = node_feats.size(0), node_feats.size(1)
        node_feats = self.projection(node_feats)
        node_feats = node_feats.view(batch_size, num_nodes, self.num_heads, -1)

        edges = adj_matrix.nonzero(as_tuple=False)  # (E, 3): graph, i, j
        node_feats_flat = node_feats.view(batch_size * num_nodes, self.num_heads, -1)
        edge_indices_row = edges[:, 0] * batch_size + edges[:, 1]  # BUG-LINE
        edge_indices_col = edges[:, 0] * num_nodes + edges[:, 2]
        a_input = torch.cat(
            [
                torch.index_select(node_feats_flat, 0, edge_indices_row),
                torch.index_select(node_feats_flat, 0, edge_indices_col),
            ],
            dim=-1,
        )
        attn_logits = torch.einsum("bhc,hc->bh", a_input, self.a)
        attn_logits = self.leakyrelu(attn_logits)

        attn_matrix = attn_logits.new_zeros(adj_matrix.shape + (self.num_heads,)).fill_(-9e15)
        attn_matrix[adj_matrix[..., None].repeat(1, 1, 1, self.num_heads) == 1] = attn_logits.reshape(-1)
        attn_probs = F.softmax(attn_matrix, dim=2)
        node_feats = torch.einsum("bijh,bjhc->bihc", attn_probs, node_feats)
        return node_feats.reshape(batch_size, num_nodes, -1)


class GATNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = GATLayer(FEAT, 32)
        self.l2 = GATLayer(32, 32)
        self.out = nn.Linear(32, CLASSES)

    def forward(self, x, adj):
        x = F.elu(self.l1(x, adj))
        x = F.elu(self.l2(x, adj))
        return self.out(x)


def make_dataset(g):
    """Each node's label is the argmax of a 'signal' carried by exactly one 'key' neighbour;
    attending to the right neighbour (identified by a flag feature) solves the task."""
    xs, adjs, ys = [], [], []
    for _ in range(NUM_GRAPHS):
        adj = (torch.rand(NUM_NODES, NUM_NODES, generator=g) < 0.3).float()
        adj = ((adj + adj.t()) > 0).float()
        adj.fill_diagonal_(1.0)
        x = torch.randn(NUM_NODES, FEAT, generator=g) * 0.5
        key = torch.rand(NUM_NODES, generator=g) < 0.3
        x[:, 0] = key.float() * 2.0
        sig = torch.randint(0, CLASSES, (NUM_NODES,), generator=g)
        x[key, 1 + sig[key]] += 2.0
        y = torch.zeros(NUM_NODES, dtype=torch.long)
        for i in range(NUM_NODES):
            nb = (adj[i] > 0) & key
            y[i] = sig[nb.nonzero()[0, 0]] if nb.any() else 0
        xs.append(x)
        adjs.append(adj)
        ys.append(y)
    return torch.stack(xs), torch.stack(adjs), torch.stack(ys)


def main():
    g = torch.Generator().manual_seed(0)
    X, A, Y = make_dataset(g)
    model = GATNet()
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    for step in range(120):
        idx = torch.randint(0, NUM_GRAPHS, (BATCH_SIZE,))
        logits = model(X[idx], A[idx])
        loss = F.cross_entropy(logits.reshape(-1, CLASSES), Y[idx].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 30 == 0 or step == 119:
            acc = (logits.argmax(-1) == Y[idx]).float().mean().item()
            print(f"step {step:3d} loss {loss.item():.4f} acc {acc:.3f}")


if __name__ == "__main__":
    main()

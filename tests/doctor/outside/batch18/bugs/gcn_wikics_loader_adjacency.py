"""GCN (one propagation layer + linear readout) for node classification on a synthetic citation-style graph.

The data loader builds the propagation matrix from the raw edge list and applies
symmetric normalisation D^-1/2 A D^-1/2, but never adds the identity (self-loops)
before normalising. Kipf & Welling's renormalisation trick uses A + I; without it
every node aggregates only its neighbours and never sees its own features, so a
graph whose labels are mostly predictable from a node's own features trains to a
noticeably lower accuracy. No error is raised and the loss still decreases.

Source: https://github.com/pmernyei/wiki-cs-dataset/issues/4
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

CFG = {
    "num_nodes": 600,
    "num_classes": 5,
    "feat_dim": 32,
    "hidden": 32,
    "p_intra": 0.008,
    "p_inter": 0.006,
    "epochs": 150,
    "lr": 0.01,
    "wd": 5e-4,
}


def make_graph(cfg):
    n, c = cfg["num_nodes"], cfg["num_classes"]
    labels = torch.randint(0, c, (n,))
    centers = torch.randn(c, cfg["feat_dim"]) * 1.2
    x = centers[labels] + torch.randn(n, cfg["feat_dim"])
    same = labels[:, None] == labels[None, :]
    prob = torch.where(same, torch.full((n, n), cfg["p_intra"]), torch.full((n, n), cfg["p_inter"]))
    upper = torch.triu(torch.rand(n, n) < prob, diagonal=1)
    src, dst = upper.nonzero(as_tuple=True)
    edge_index = torch.stack([torch.cat([src, dst]), torch.cat([dst, src])])
    perm = torch.randperm(n)
    train_mask = torch.zeros(n, dtype=torch.bool)
    test_mask = torch.zeros(n, dtype=torch.bool)
    train_mask[perm[:200]] = True
    test_mask[perm[300:]] = True
    return x, labels, edge_index, train_mask, test_mask


class GraphLoader:
    """Mimics a from_file() style loader that returns a dense normalised adjacency."""

    def __init__(self, edge_index, num_nodes):
        self.edge_index = edge_index
        self.num_nodes = num_nodes

    def adjacency(self):
        n = self.num_nodes
        adj = torch.zeros(n, n)
        adj[self.edge_index[0], self.edge_index[1]] = 1.0
        return adj

    def normalized_adjacency(self):
        a = self.adjacency()  # BUG-LINE
        deg = a.sum(1)
        d_inv_sqrt = deg.clamp(min=1).pow(-0.5)
        d_inv_sqrt[deg == 0] = 0.0
        return d_inv_sqrt[:, None] * a * d_inv_sqrt[None, :]


class GCN(nn.Module):
    def __init__(self, in_dim, hid, out_dim):
        super().__init__()
        self.lin1 = nn.Linear(in_dim, hid)
        self.lin2 = nn.Linear(hid, out_dim)
        self.drop = nn.Dropout(0.5)

    def forward(self, x, a_hat):
        h = F.relu(a_hat @ self.lin1(x))
        h = self.drop(h)
        return self.lin2(h)


def main():
    x, y, ei, train_mask, test_mask = make_graph(CFG)
    a_hat = GraphLoader(ei, CFG["num_nodes"]).normalized_adjacency()
    model = GCN(CFG["feat_dim"], CFG["hidden"], CFG["num_classes"])
    opt = torch.optim.Adam(model.parameters(), lr=CFG["lr"], weight_decay=CFG["wd"])
    for epoch in range(CFG["epochs"]):
        model.train()
        opt.zero_grad()
        out = model(x, a_hat)
        loss = F.cross_entropy(out[train_mask], y[train_mask])
        loss.backward()
        opt.step()
        if epoch % 25 == 0 or epoch == CFG["epochs"] - 1:
            model.eval()
            with torch.no_grad():
                pred = model(x, a_hat).argmax(1)
                acc = (pred[test_mask] == y[test_mask]).float().mean().item()
            print(f"epoch {epoch:3d} loss {loss.item():.4f} test_acc {acc:.3f}")


if __name__ == "__main__":
    main()

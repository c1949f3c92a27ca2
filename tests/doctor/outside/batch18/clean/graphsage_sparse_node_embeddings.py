"""Mini-batch GraphSAGE-style node classification on a featureless stochastic block
model graph, with learnable per-node embeddings.

Unusual but correct: nodes have no input features, so each node owns a row of an
nn.Embedding(sparse=True). A mini-batch only looks up the embeddings of the batch
nodes and their sampled neighbours, so the embedding receives a sparse gradient and is
optimised by torch.optim.SparseAdam (which updates only the touched rows), while the
dense aggregation / classifier layers use a separate Adam optimizer. Both optimizers
are zeroed and stepped every iteration.

Source: https://github.com/dmlc/dgl/pull/2451
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N, C, FANOUT, DIM = 1200, 4, 8, 32


def sbm_graph(n, c, p_in=0.02, p_out=0.002):
    y = torch.arange(n) % c
    same = y[:, None] == y[None, :]
    prob = torch.where(same, torch.tensor(p_in), torch.tensor(p_out))
    adj = torch.triu(torch.rand(n, n) < prob, 1)
    adj = adj | adj.t()
    neighbors = [adj[i].nonzero().flatten() for i in range(n)]
    return y, neighbors


def sample_neighbors(nodes, neighbors):
    out = torch.empty(len(nodes), FANOUT, dtype=torch.long)
    for j, v in enumerate(nodes.tolist()):
        nb = neighbors[v]
        if len(nb) == 0:
            out[j] = v
        else:
            out[j] = nb[torch.randint(0, len(nb), (FANOUT,))]
    return out


class SAGEWithEmbeddings(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(N, DIM, sparse=True)
        self.self_lin = nn.Linear(DIM, 64)
        self.neigh_lin = nn.Linear(DIM, 64)
        self.out = nn.Sequential(nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, C))

    def forward(self, nodes, nbrs):
        h_self = self.emb(nodes)
        h_nb = self.emb(nbrs).mean(1)
        return self.out(self.self_lin(h_self) + self.neigh_lin(h_nb))


def main():
    y, neighbors = sbm_graph(N, C)
    perm = torch.randperm(N)
    train_idx, test_idx = perm[:600], perm[600:]
    model = SAGEWithEmbeddings()
    sparse_opt = torch.optim.SparseAdam(list(model.emb.parameters()), lr=0.01)
    dense_params = [p for n, p in model.named_parameters() if not n.startswith("emb.")]
    dense_opt = torch.optim.Adam(dense_params, lr=0.005)
    for step in range(150):
        model.train()
        batch = train_idx[torch.randint(0, len(train_idx), (64,))]
        logits = model(batch, sample_neighbors(batch, neighbors))
        loss = F.cross_entropy(logits, y[batch])
        sparse_opt.zero_grad()
        dense_opt.zero_grad()
        loss.backward()
        sparse_opt.step()
        dense_opt.step()
        if step % 30 == 0 or step == 149:
            model.eval()
            with torch.no_grad():
                pred = model(test_idx, sample_neighbors(test_idx, neighbors)).argmax(1)
                acc = (pred == y[test_idx]).float().mean().item()
            print(
                f"step {step:3d} loss {loss.item():.4f} test_acc {acc:.3f} emb_grad_sparse {model.emb.weight.grad.is_sparse}"
            )


if __name__ == "__main__":
    main()

"""Two-layer GCN for transductive node classification on a stochastic block model graph.

Clean program. Unusual on purpose: every forward pass runs on the whole graph (all
nodes, including test nodes, whose features take part in message passing), but the loss
is computed only on the 5 labelled nodes per class selected by a boolean train mask; the
model outputs log_softmax and the loss is NLLLoss on those log-probabilities; the
propagation matrix is the renormalised D^-1/2 (A + I) D^-1/2 built once as a dense
buffer, so each node's output mixes its neighbours by design. The report explains that
the model always does a full-graph forward and the mask only selects which labels are
used, as done here.

Source: https://github.com/tkipf/gcn/issues/2
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N, C, F_IN = 240, 4, 20
labels = torch.arange(N) % C
p_in, p_out = 0.08, 0.005
prob = torch.where(labels[:, None] == labels[None, :], p_in, p_out)
A = (torch.rand(N, N) < prob).float()
A = torch.triu(A, 1)
A = A + A.T
feat_centers = torch.randn(C, F_IN) * 0.5
X = feat_centers[labels] + torch.randn(N, F_IN)

A_hat = A + torch.eye(N)
d_inv_sqrt = A_hat.sum(1).pow(-0.5)
A_norm = d_inv_sqrt[:, None] * A_hat * d_inv_sqrt[None, :]

train_mask = torch.zeros(N, dtype=torch.bool)
for c in range(C):
    train_mask[(labels == c).nonzero().squeeze(1)[:5]] = True
test_mask = ~train_mask


class GCN(nn.Module):
    def __init__(self, a_norm):
        super().__init__()
        self.register_buffer("a_norm", a_norm)
        self.w1 = nn.Linear(F_IN, 32)
        self.w2 = nn.Linear(32, C)

    def forward(self, x):
        h = F.relu(self.a_norm @ self.w1(F.dropout(x, 0.5, self.training)))
        h = self.a_norm @ self.w2(F.dropout(h, 0.5, self.training))
        return F.log_softmax(h, dim=-1)


model = GCN(A_norm)
opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=5e-4)
crit = nn.NLLLoss()
for epoch in range(150):
    model.train()
    logp = model(X)
    loss = crit(logp[train_mask], labels[train_mask])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if epoch % 30 == 0 or epoch == 149:
        model.eval()
        with torch.no_grad():
            acc = (model(X).argmax(1)[test_mask] == labels[test_mask]).float().mean().item()
        print(f"epoch {epoch:3d}  train nll {loss.item():.4f}  test acc {acc:.3f}")

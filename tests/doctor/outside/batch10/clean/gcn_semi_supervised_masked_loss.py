"""Two-layer graph convolutional network for semi-supervised node classification on a synthetic stochastic
block model graph. The propagation matrix is D^-1/2 (A + I) D^-1/2 built once as a dense tensor, the whole
graph is passed through the model at every step, and the cross-entropy is computed only on the 10% of nodes in
the training mask, as in Kipf & Welling; the other nodes' labels are never used for training, only for the
final accuracy. L2 regularisation is applied to the first layer only, via a per-parameter-group weight decay.
Source: https://arxiv.org/abs/1609.02907
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
N, C, FEAT = 400, 4, 32
y = torch.randint(0, C, (N,))
prob = torch.where(y[:, None] == y[None, :], 0.05, 0.005)
A = (torch.rand(N, N) < prob).float()
A = ((A + A.T) > 0).float()
A.fill_diagonal_(0)
A_hat = A + torch.eye(N)
d_inv_sqrt = A_hat.sum(1).pow(-0.5)
P = d_inv_sqrt[:, None] * A_hat * d_inv_sqrt[None, :]
X = torch.randn(N, FEAT) + 0.3 * F.one_hot(y, FEAT).float()
train_mask = torch.zeros(N, dtype=torch.bool)
train_mask[torch.randperm(N)[: N // 10]] = True


class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = nn.Linear(FEAT, 32)
        self.w2 = nn.Linear(32, C)

    def forward(self, x):
        h = F.dropout(F.relu(P @ self.w1(x)), 0.5, self.training)
        return P @ self.w2(h)


model = GCN()
opt = torch.optim.Adam(
    [{"params": model.w1.parameters(), "weight_decay": 5e-4}, {"params": model.w2.parameters(), "weight_decay": 0.0}],
    lr=1e-2,
)
for epoch in range(100):
    model.train()
    loss = F.cross_entropy(model(X)[train_mask], y[train_mask])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if epoch % 25 == 0:
        print(f"epoch {epoch} loss {loss.item():.4f}")
model.eval()
with torch.no_grad():
    pred = model(X).argmax(1)
print("unlabelled-node acc:", round((pred[~train_mask] == y[~train_mask]).float().mean().item(), 4))

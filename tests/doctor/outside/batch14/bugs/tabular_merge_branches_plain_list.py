"""Tabular classifier whose parallel feature branches are merged by concatenation.

The branches are kept in an ordinary Python list inside the module, so
nn.Module never registers them: model.parameters() only yields the merge head,
the optimizer never sees the branch weights, and the branches stay at their
random initialisation for the whole run (they are also missing from
state_dict()). The loss still falls a little because the head adapts to the
random features, so nothing looks broken. The fix is nn.ModuleList.

Source: https://github.com/asyml/texar-pytorch/issues/72
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


class MergeNet(nn.Module):
    def __init__(self, d_in, d_branch, n_branches, n_out):
        super().__init__()
        self.branches = [nn.Sequential(nn.Linear(d_in, d_branch), nn.Tanh()) for _ in range(n_branches)]  # BUG-LINE
        self.head = nn.Linear(d_branch * n_branches, n_out)

    def forward(self, x):
        feats = [branch(x) for branch in self.branches]
        return self.head(torch.cat(feats, dim=-1))


def make_data(n):
    x = torch.randn(n, 12)
    score = torch.sin(2.0 * x[:, 0]) + x[:, 1] * x[:, 2] - 0.5 * x[:, 3].abs()
    y = torch.bucketize(score, torch.tensor([-0.6, 0.0, 0.6]))
    return x, y


x_train, y_train = make_data(2048)
x_val, y_val = make_data(512)

model = MergeNet(12, 8, 3, 4)
n_params = sum(p.numel() for p in model.parameters())
print(f"registered parameters: {n_params}")
opt = torch.optim.Adam(model.parameters(), lr=3e-3)

for step in range(300):
    idx = torch.randint(0, x_train.shape[0], (128,))
    logits = model(x_train[idx])
    loss = F.cross_entropy(logits, y_train[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0 or step == 299:
        with torch.no_grad():
            acc = (model(x_val).argmax(-1) == y_val).float().mean().item()
        print(f"step {step:3d} loss {loss.item():.4f} val_acc {acc:.3f}")

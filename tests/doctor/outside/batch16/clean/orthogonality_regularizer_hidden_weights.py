"""Soft orthogonality regulariser ||W W^T - I||_F^2 added to the task loss.

Unusual on purpose: the loss contains a term that depends only on the weights
(not on the data), computed from the square hidden weight matrices every step,
so the gradient of each hidden weight has a data part and a regulariser part;
the regulariser is applied only to selected layers (the square hidden ones),
not to the input/output projections or biases.

Source: https://www.codegenes.net/blog/orthogonal-regularization-pytorch
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N, D, H, C = 800, 20, 48, 4
X = torch.randn(N, D)
y = (X @ torch.randn(D, C) + 0.5 * torch.randn(N, C)).argmax(1)

model = nn.Sequential(
    nn.Linear(D, H), nn.Tanh(), nn.Linear(H, H), nn.Tanh(), nn.Linear(H, H), nn.Tanh(), nn.Linear(H, C)
)
square = [m.weight for m in model if isinstance(m, nn.Linear) and m.weight.shape[0] == m.weight.shape[1]]
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
beta = 1e-2
eye = torch.eye(H)


def ortho_penalty():
    return sum(((W @ W.t() - eye) ** 2).sum() for W in square)


for step in range(150):
    idx = torch.randint(0, 600, (64,))
    task = F.cross_entropy(model(X[idx]), y[idx])
    reg = ortho_penalty()
    loss = task + beta * reg
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 30 == 0 or step == 149:
        with torch.no_grad():
            acc = (model(X[600:]).argmax(1) == y[600:]).float().mean().item()
        print(f"step {step:3d} task {task.item():.4f} ortho {reg.item():.3f} val acc {acc:.3f}")

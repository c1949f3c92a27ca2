"""LARS optimizer written by hand for a small SimCLR-style projection MLP.

The trust ratio is computed with `torch.where(w_norm.ge(0), ...)`. Because the
outer condition is `>=` instead of `>`, a parameter whose norm is exactly zero
(BatchNorm biases and zero-initialised Linear biases) gets trust ratio
eta * 0 / g_norm = 0, so its effective learning rate is zero and it never moves
from its initial value. Training still runs and the loss falls (the weights
learn), but every bias stays frozen at zero. The reference TF code uses
`tf.greater`, i.e. `>`.

Source: https://github.com/Spijkervet/SimCLR/issues/27
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


class LARS(torch.optim.Optimizer):
    def __init__(self, params, lr=0.1, momentum=0.9, weight_decay=1e-6, eeta=1e-3):
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay, eeta=eeta))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad.add(p, alpha=group["weight_decay"])
                w_norm = torch.norm(p)
                g_norm = torch.norm(g)
                one = torch.ones_like(w_norm)
                trust_ratio = torch.where(
                    w_norm.ge(0),  # BUG-LINE
                    torch.where(g_norm.gt(0), group["eeta"] * w_norm / g_norm, one),
                    one,
                )
                scaled_lr = group["lr"] * trust_ratio
                state = self.state[p]
                if "mom" not in state:
                    state["mom"] = torch.zeros_like(p)
                mom = state["mom"]
                mom.mul_(group["momentum"]).add_(g, alpha=scaled_lr.item())
                p.sub_(mom)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 64)
        self.bn1 = nn.BatchNorm1d(64)
        self.fc2 = nn.Linear(64, 64)
        self.bn2 = nn.BatchNorm1d(64)
        self.out = nn.Linear(64, 5)
        for m in (self.fc1, self.fc2, self.out):
            nn.init.zeros_(m.bias)

    def forward(self, x):
        x = F.relu(self.bn1(self.fc1(x)))
        x = F.relu(self.bn2(self.fc2(x)))
        return self.out(x)


X = torch.randn(2048, 20) + 0.5
W = torch.randn(20, 5)
y = (X @ W + 1.5 * torch.tensor([1.0, -1.0, 0.5, 0.0, -0.5])).argmax(1)

model = Net()
opt = LARS(model.parameters(), lr=2.0, eeta=0.02)

for step in range(140):
    idx = torch.randint(0, X.shape[0], (128,))
    loss = F.cross_entropy(model(X[idx]), y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 40 == 0 or step == 139:
        print(f"step {step:3d} loss {loss.item():.4f}")

model.eval()
with torch.no_grad():
    acc = (model(X).argmax(1) == y).float().mean().item()
print(f"train acc {acc:.3f}")

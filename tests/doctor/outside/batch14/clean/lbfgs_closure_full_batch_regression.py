"""Full-batch curve fitting of a small MLP with torch.optim.LBFGS and a proper closure.

Unusual but correct: LBFGS re-evaluates the objective several times per
step, so the whole forward pass, loss computation, zero_grad and backward are
inside the closure passed to optimizer.step(closure), and the closure returns
the loss. The closure is a pure function of the current parameters (full
batch, no dropout or random augmentation), which the line search needs.
strong_wolfe line search is used; the returned loss is logged.

Source: https://github.com/mohammadbashiri/fitgabor/pull/1
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

x = torch.linspace(-3, 3, 400).unsqueeze(1)
y = torch.sin(2 * x) * torch.exp(-0.2 * x**2) + 0.02 * torch.randn_like(x)

model = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.LBFGS(model.parameters(), lr=1.0, max_iter=20, history_size=20, line_search_fn="strong_wolfe")


def closure():
    opt.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    return loss


for step in range(15):
    loss = opt.step(closure)
    if step % 5 == 0 or step == 14:
        print(f"step {step:2d} loss {loss.item():.6f}")

with torch.no_grad():
    print(f"final mse {F.mse_loss(model(x), y).item():.6f}")

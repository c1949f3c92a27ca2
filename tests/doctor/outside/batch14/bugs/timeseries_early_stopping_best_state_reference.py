"""Time-series forecaster (lag-window MLP) trained with early-stopping style best-checkpoint selection.

Whenever the validation loss improves the code stores
best_state = model.state_dict(). state_dict() returns references to the live
parameter tensors, not a copy, so best_state keeps changing as training goes
on. When the "best" weights are restored at the end, the model actually gets
the last (over-fitted) weights, and the reported best validation loss does not
match the restored model. No error is raised.

Source: https://github.com/WenjieDu/PyPOTS/issues/667
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Flatten(), nn.Linear(24, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1)
        )

    def forward(self, x):
        return self.net(x)


def make_series(n, length=24):
    t0 = torch.rand(n, 1) * 6.28
    t = t0 + torch.arange(length + 1).float() * 0.3
    s = torch.sin(t) + 0.5 * torch.sin(2.3 * t) + 0.3 * torch.randn(n, length + 1)
    return s[:, :length, None], s[:, length:]


x_tr, y_tr = make_series(96)
x_va, y_va = make_series(200)

model = Forecaster()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
best_val, best_state, best_epoch = float("inf"), None, -1

for epoch in range(120):
    model.train()
    loss = F.mse_loss(model(x_tr), y_tr)
    opt.zero_grad()
    loss.backward()
    opt.step()
    model.eval()
    with torch.no_grad():
        val = F.mse_loss(model(x_va), y_va).item()
    if val < best_val:
        best_val, best_epoch = val, epoch
        best_state = model.state_dict()  # BUG-LINE
    if epoch % 20 == 0 or epoch == 119:
        print(f"epoch {epoch:3d} train {loss.item():.4f} val {val:.4f} best {best_val:.4f}@{best_epoch}")

model.load_state_dict(best_state)
model.eval()
with torch.no_grad():
    restored = F.mse_loss(model(x_va), y_va).item()
print(f"restored model val {restored:.4f} (recorded best {best_val:.4f} at epoch {best_epoch})")

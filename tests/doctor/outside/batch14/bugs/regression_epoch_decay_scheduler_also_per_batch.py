"""Regression MLP with an epoch-based learning-rate decay schedule.

The LambdaLR factor is written in epochs (lr * 0.95 ** epoch, i.e. a gentle
decay over 10 epochs), and scheduler.step() is correctly called at the end of
each epoch, but it is ALSO called after every batch. With 32 batches per epoch
the schedule advances 33 times per epoch, so after two epochs the learning
rate is already about 3% of its start value, by the end it is below 1e-7 of it,
and training stalls with the loss far above where it would otherwise end. No warning is raised.

Source: https://github.com/aimagelab/meshed-memory-transformer/issues/71
"""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

x = torch.rand(2048, 6) * 4 - 2
y = (torch.sin(x[:, 0] * 2) + 0.5 * x[:, 1] ** 2 - x[:, 2] * x[:, 3] + 0.1 * torch.randn(2048)).unsqueeze(1)
loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)

model = nn.Sequential(nn.Linear(6, 64), nn.SiLU(), nn.Linear(64, 64), nn.SiLU(), nn.Linear(64, 1))
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
scheduler = torch.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 0.95**epoch)
loss_fn = nn.MSELoss()

for epoch in range(10):
    total = 0.0
    for xb, yb in loader:
        loss = loss_fn(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        scheduler.step()  # BUG-LINE
        total += loss.item() * xb.shape[0]
    scheduler.step()
    print(f"epoch {epoch} mse {total / len(loader.dataset):.4f} lr {opt.param_groups[0]['lr']:.2e}")

"""OneCycleLR built in optimizer steps (total_steps = epochs x batches per epoch, the first 30% a warm-up from
max_lr / 25) but stepped once per epoch: the lr stays at the start of its warm-up for the whole run.

doctor-expect: schedule_not_stepped
"""

import torch
from torch import nn

torch.manual_seed(0)
X, y = torch.randn(512, 10), torch.randint(0, 4, (512,))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
epochs = 20
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=epochs * len(loader))
for _epoch in range(epochs):
    for xb, yb in loader:
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
    sched.step()  # bug: OneCycleLR counts optimizer steps; this belongs after opt.step()

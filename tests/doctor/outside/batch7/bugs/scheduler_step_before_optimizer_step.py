"""The learning-rate scheduler is stepped at the top of every iteration, before
optimizer.step(). With PyTorch >= 1.1 this shifts the whole schedule by one: the
first value of the schedule (the warm-up/initial learning rate) is never used,
so the very first optimizer step already runs with the decayed rate and every
later step is one position ahead of the intended schedule.

Source: https://github.com/mlcommons/GaNDLF/issues/107
"""

import warnings

import torch
from torch import nn

warnings.filterwarnings("ignore")
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
x = torch.randn(64, 8)
y = x.sum(dim=1, keepdim=True)
for _step in range(6):
    sched.step()  # BUG-LINE
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
print("final loss", loss.item())

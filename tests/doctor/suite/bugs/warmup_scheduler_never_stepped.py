"""Linear warm-up from 0 with LambdaLR, but scheduler.step() is never called: the lr stays 0.

doctor-expect: step_changes_nothing
"""

import torch
from torch import nn

torch.manual_seed(0)
X, y = torch.randn(512, 10), torch.randint(0, 2, (512,))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
warmup = 100
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, s / warmup))
for xb, yb in loader:
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()  # bug: sched.step() missing, lr stays at lambda(0) * 0.1 = 0

"""On resume the optimizer state is loaded first and a fresh LR scheduler is constructed afterwards.

Building a LambdaLR on the restored optimizer resets each group's lr to initial_lr * lambda(0)
and the scheduler's epoch counter is not restored, throwing away the decayed learning rate
from the checkpoint. The resumed run takes its first steps at the initial (8x larger) lr.
Source: https://github.com/torch-points3d/torch-points3d/pull/630
"""

import torch

torch.manual_seed(0)


def make():
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    o = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    return m, o


def lr_lambda(epoch):
    return 0.5**epoch


model, opt = make()
sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda)
for _epoch in range(3):
    x = torch.randn(16, 8)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
ckpt = {"model": model.state_dict(), "opt": opt.state_dict(), "epoch": 3}

# resume
model2, opt2 = make()
model2.load_state_dict(ckpt["model"])
opt2.load_state_dict(ckpt["opt"])
sched2 = torch.optim.lr_scheduler.LambdaLR(opt2, lr_lambda)  # BUG-LINE
for _step in range(6):
    x = torch.randn(16, 8)
    loss = model2(x).pow(2).mean()
    opt2.zero_grad()
    loss.backward()
    opt2.step()
print(f"resumed lr {opt2.param_groups[0]['lr']:.4f} loss {loss.item():.4f}")

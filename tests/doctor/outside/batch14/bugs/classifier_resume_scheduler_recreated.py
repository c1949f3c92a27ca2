"""MLP classifier trained with a step-decay LambdaLR schedule, interrupted and resumed from a checkpoint.

The checkpoint stores the model and optimizer state dicts and the epoch, but
on resume the step-decay LambdaLR scheduler is simply rebuilt from scratch and
its state is never restored. The loaded optimizer param_groups carry
'initial_lr', and the fresh scheduler (last_epoch=-1) immediately resets the
learning rate to initial_lr * lambda(0), i.e. the undecayed value, and
restarts the decay count at zero, so the resumed half of the
run trains at the large initial LR again instead of the decayed one, and the
loss jumps back up. No error is raised.

Source: https://github.com/D-X-Y/NAS-Bench-201/issues/19
"""

import io

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

x = torch.randn(3000, 20)
w = torch.randn(20, 6)
y = (x @ w + 0.8 * torch.randn(3000, 6)).argmax(-1)


def build():
    return nn.Sequential(nn.Linear(20, 128), nn.ReLU(), nn.Linear(128, 6))


def run_epoch(model, opt, epoch, sched):
    perm = torch.randperm(x.shape[0])
    total = 0.0
    for b in range(0, x.shape[0], 100):
        idx = perm[b : b + 100]
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    sched.step()
    print(f"epoch {epoch} loss {total / 30:.4f} lr {opt.param_groups[0]['lr']:.4f}")


model = build()
opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda e: 0.2 ** (e // 2))
for epoch in range(5):
    run_epoch(model, opt, epoch, sched)

buf = io.BytesIO()
torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(), "epoch": 5}, buf)
buf.seek(0)
ckpt = torch.load(buf)

model = build()
model.load_state_dict(ckpt["model"])
opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
opt.load_state_dict(ckpt["opt"])
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda e: 0.2 ** (e // 2))  # BUG-LINE
print(f"resumed at epoch {ckpt['epoch']} with lr {opt.param_groups[0]['lr']:.4f}")
for epoch in range(ckpt["epoch"], 9):
    run_epoch(model, opt, epoch, sched)

"""MLP classifier with a warmup+decay schedule, checkpointed mid-run and resumed in the same process.

Unusual but correct: training is stopped after 4 epochs, the model,
optimizer, scheduler and epoch counter are serialised together, then a fresh
model/optimizer/scheduler are constructed and ALL three state dicts are
loaded (scheduler last, after the optimizer) before training continues. The
resumed learning rate and decay position therefore continue exactly where
they left off, which the printout shows, rather than restarting the warmup.

Source: https://github.com/lightly-ai/lightly-train/pull/301
"""

import io

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

x = torch.randn(3000, 20)
y = (x @ torch.randn(20, 6) + 0.8 * torch.randn(3000, 6)).argmax(-1)
STEPS_PER_EPOCH = 30


def lr_factor(step):
    warm = 20
    return (step + 1) / warm if step < warm else 0.992 ** (step - warm)


def build():
    model = nn.Sequential(nn.Linear(20, 128), nn.ReLU(), nn.Linear(128, 6))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
    return model, opt, sched


def run_epoch(model, opt, sched, epoch):
    perm = torch.randperm(x.shape[0])
    total = 0.0
    for b in range(STEPS_PER_EPOCH):
        idx = perm[b * 100 : (b + 1) * 100]
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        total += loss.item()
    print(f"epoch {epoch} loss {total / STEPS_PER_EPOCH:.4f} lr {opt.param_groups[0]['lr']:.2e}")


model, opt, sched = build()
for epoch in range(4):
    run_epoch(model, opt, sched, epoch)

buf = io.BytesIO()
torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(), "epoch": 4}, buf)
buf.seek(0)
ckpt = torch.load(buf)

model, opt, sched = build()
model.load_state_dict(ckpt["model"])
opt.load_state_dict(ckpt["opt"])
sched.load_state_dict(ckpt["sched"])
print(f"resumed at epoch {ckpt['epoch']} lr {opt.param_groups[0]['lr']:.2e} sched step {sched.last_epoch}")
for epoch in range(ckpt["epoch"], 8):
    run_epoch(model, opt, sched, epoch)

"""Resuming from a checkpoint silently restarts the cosine LR schedule.

Training is split into two sessions.  The checkpoint stores the model, the
optimizer state and the epoch counter, and on resume the script rebuilds the
``CosineAnnealingWarmRestarts`` scheduler with ``last_epoch=-1`` instead of
restoring its state (or passing the resumed epoch).  The fresh scheduler resets
every param group's LR to the base LR, so the second session starts the cosine
cycle from the top again: the LR jumps from ~1e-3 back to 2e-2 in the middle of
a cycle, the loss bumps up and the run no longer matches an uninterrupted one.
There is no error or warning.

Source: https://runebook.dev/en/docs/pytorch/generated/torch.optim.lr_scheduler.cosineannealingwarmrestarts/torch.optim.lr_scheduler.CosineAnnealingWarmRestarts.state_dict
"""

import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

HP = {"lr": 2e-2, "T_0": 12, "eta_min": 1e-4, "epochs_total": 12, "interrupt_at": 7, "steps_per_epoch": 20}


def get_data(n=1024):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(n, 20, generator=g)
    w = 0.3 * torch.randn(20, 1, generator=g)
    y = torch.sin(x @ w) + 0.05 * torch.randn(n, 1, generator=g)
    return x, y


def build_model():
    return nn.Sequential(nn.Linear(20, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))


def build_optimizer(model):
    return torch.optim.SGD(model.parameters(), lr=HP["lr"], momentum=0.9)


def build_scheduler(optimizer, last_epoch=-1):
    return torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        optimizer, T_0=HP["T_0"], eta_min=HP["eta_min"], last_epoch=last_epoch
    )


def run_epochs(model, opt, sched, x, y, start, stop):
    for epoch in range(start, stop):
        tot = 0.0
        for _ in range(HP["steps_per_epoch"]):
            idx = torch.randint(0, x.shape[0], (64,))
            loss = F.mse_loss(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item()
        sched.step()
        print(f"epoch {epoch:2d} loss {tot / HP['steps_per_epoch']:.4f} next lr {opt.param_groups[0]['lr']:.5f}")


def session_one(ckpt_path, x, y):
    model = build_model()
    opt = build_optimizer(model)
    sched = build_scheduler(opt)
    run_epochs(model, opt, sched, x, y, 0, HP["interrupt_at"])
    torch.save(
        {
            "epoch": HP["interrupt_at"],
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "scheduler": sched.state_dict(),
        },
        ckpt_path,
    )


def session_two(ckpt_path, x, y):
    ckpt = torch.load(ckpt_path)
    model = build_model()
    model.load_state_dict(ckpt["model"])
    opt = build_optimizer(model)
    opt.load_state_dict(ckpt["optimizer"])
    sched = build_scheduler(opt, last_epoch=-1)  # BUG-LINE
    print(f"resumed at epoch {ckpt['epoch']} with lr {opt.param_groups[0]['lr']:.5f}")
    run_epochs(model, opt, sched, x, y, ckpt["epoch"], HP["epochs_total"])


def main():
    x, y = get_data()
    ckpt_path = os.path.join(tempfile.mkdtemp(), "last.pt")
    session_one(ckpt_path, x, y)
    session_two(ckpt_path, x, y)


if __name__ == "__main__":
    main()

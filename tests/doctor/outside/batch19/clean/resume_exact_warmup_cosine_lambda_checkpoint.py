"""Checkpoint/resume that restores optimizer, scheduler and RNG state exactly (correct).

Unusual but correct: the LR schedule is a ``LambdaLR`` that warms up linearly
from zero (the very first step uses lr=0) and then follows a cosine decay; it is
stepped per optimizer step.  Training is interrupted halfway, and the checkpoint
holds the model, the AdamW state, ``scheduler.state_dict()`` and the torch RNG
state.  On resume, fresh objects are built and every state is loaded, so the
resumed run continues the schedule where it stopped.  The program checks that
the resumed weights equal those of an uninterrupted run.

Source: https://www.codegenes.net/blog/learning-rate-scheduler-when-resuming-pytorch
"""

import math
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

TOTAL, WARMUP, STOP_AT, LR = 120, 20, 55, 3e-3
X = torch.randn(512, 10)
Y = (X[:, :3].sum(1, keepdim=True) > 0).float()


def lr_lambda(step):
    if step < WARMUP:
        return step / WARMUP
    progress = (step - WARMUP) / max(1, TOTAL - WARMUP)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def build():
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda)
    return model, opt, sched


def train(model, opt, sched, start, stop, log=True):
    for step in range(start, stop):
        idx = torch.randint(0, X.shape[0], (32,))
        loss = F.binary_cross_entropy_with_logits(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if log and (step % 20 == 0 or step == stop - 1):
            print(f"step {step:3d} loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.2e}")


def main():
    # reference: one uninterrupted run
    ref_model, ref_opt, ref_sched = build()
    torch.manual_seed(123)
    train(ref_model, ref_opt, ref_sched, 0, TOTAL, log=False)

    # session 1
    model, opt, sched = build()
    torch.manual_seed(123)
    train(model, opt, sched, 0, STOP_AT)
    path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
    torch.save(
        {
            "step": STOP_AT,
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "scheduler": sched.state_dict(),
            "rng": torch.get_rng_state(),
        },
        path,
    )
    del model, opt, sched

    # session 2: fresh objects, everything restored
    ckpt = torch.load(path)
    model, opt, sched = build()
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["optimizer"])
    sched.load_state_dict(ckpt["scheduler"])
    torch.set_rng_state(ckpt["rng"])
    print(f"resumed at step {ckpt['step']} lr {opt.param_groups[0]['lr']:.2e}")
    train(model, opt, sched, ckpt["step"], TOTAL)

    same = all(torch.allclose(a, b, atol=1e-6) for a, b in zip(model.parameters(), ref_model.parameters()))
    print(f"resumed weights match uninterrupted run: {same}")


if __name__ == "__main__":
    main()

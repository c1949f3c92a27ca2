"""Matrix-factorization recommender checkpointed mid-run and resumed bit-exactly.

Unusual but correct: the script trains a dropout-regularized MF model with Adam
and a OneCycle schedule, saves a *full* training-state checkpoint halfway (model,
optimizer moments, scheduler position, global step, and the torch RNG state that
drives dropout and batch sampling), continues the original run, then rebuilds
everything from scratch, creates the optimizer/scheduler over the new model's
parameters, and only then loads their state dicts (no re-construction after
loading, which would wipe Adam's state).  The resumed run reproduces the
uninterrupted run's final loss and weights exactly.

Source: https://github.com/OpenNMT/OpenNMT-py/issues/617
"""

import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_USERS, N_ITEMS, RANK = 300, 200, 16
TOTAL_STEPS, SAVE_AT, BATCH = 160, 80, 256


def ratings():
    g = torch.Generator().manual_seed(1)
    u_true, i_true = torch.randn(N_USERS, 4, generator=g), torch.randn(N_ITEMS, 4, generator=g)
    users = torch.randint(0, N_USERS, (20000,), generator=g)
    items = torch.randint(0, N_ITEMS, (20000,), generator=g)
    r = (u_true[users] * i_true[items]).sum(1) + 0.1 * torch.randn(20000, generator=g)
    return users, items, r


class MF(nn.Module):
    def __init__(self):
        super().__init__()
        self.U = nn.Embedding(N_USERS, RANK)
        self.I = nn.Embedding(N_ITEMS, RANK)
        self.ub = nn.Embedding(N_USERS, 1)
        self.ib = nn.Embedding(N_ITEMS, 1)
        self.drop = nn.Dropout(0.1)
        for e in (self.U, self.I):
            nn.init.normal_(e.weight, std=0.1)
        nn.init.zeros_(self.ub.weight)
        nn.init.zeros_(self.ib.weight)

    def forward(self, u, i):
        return (self.drop(self.U(u)) * self.I(i)).sum(1) + self.ub(u).squeeze(1) + self.ib(i).squeeze(1)


def make_state():
    model = MF()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-2, total_steps=TOTAL_STEPS)
    return model, opt, sched


def run(model, opt, sched, data, start, stop, ckpt_path=None):
    users, items, r = data
    loss = None
    for step in range(start, stop):
        idx = torch.randint(0, len(r), (BATCH,))
        loss = F.mse_loss(model(users[idx], items[idx]), r[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 40 == 0:
            print(f"  step {step:3d} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e}")
        if ckpt_path is not None and step + 1 == SAVE_AT:
            torch.save(
                {
                    "model": model.state_dict(),
                    "opt": opt.state_dict(),
                    "sched": sched.state_dict(),
                    "step": step + 1,
                    "rng": torch.get_rng_state(),
                },
                ckpt_path,
            )
    return loss.item()


def main():
    data = ratings()
    path = os.path.join(tempfile.mkdtemp(), "mf.pt")
    print("uninterrupted run")
    model_a, opt_a, sched_a = make_state()
    final_a = run(model_a, opt_a, sched_a, data, 0, TOTAL_STEPS, ckpt_path=path)

    print("resumed run")
    torch.manual_seed(1234)
    model_b, opt_b, sched_b = make_state()
    ckpt = torch.load(path)
    model_b.load_state_dict(ckpt["model"])
    opt_b.load_state_dict(ckpt["opt"])
    sched_b.load_state_dict(ckpt["sched"])
    torch.set_rng_state(ckpt["rng"])
    final_b = run(model_b, opt_b, sched_b, data, ckpt["step"], TOTAL_STEPS)

    max_diff = max((pa - pb).abs().max().item() for pa, pb in zip(model_a.parameters(), model_b.parameters()))
    print(f"final loss uninterrupted {final_a:.6f} resumed {final_b:.6f} max weight diff {max_diff:.2e}")


if __name__ == "__main__":
    main()

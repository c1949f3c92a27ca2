"""SAMformer-style multivariate forecaster trained with Sharpness-Aware Minimization (two passes per step).

Unusual on purpose: every optimisation step runs forward + backward twice. The first backward gives
the gradient used to move the weights to the worst-case neighbour w + e(w) (first_step, under
no_grad); the second forward/backward is computed at that perturbed point; second_step restores the
original weights and only then calls the base optimizer with the second gradient. Weights are
written in place under torch.no_grad() on purpose, and the base optimizer is stepped once per
iteration. Attention runs across channels (not time), and reversible instance normalisation
subtracts/adds the per-series mean and std, which mixes time steps of one series by design.
Modelled on the SAMformer issue, which explains that first_step and second_step are called
explicitly in place of the closure-based step().

Source: https://github.com/romilbert/samformer/issues/14
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

C, L, H = 7, 48, 12


class SAM(torch.optim.Optimizer):
    def __init__(self, params, base_optimizer_cls, rho=0.05, **kwargs):
        defaults = dict(rho=rho, **kwargs)
        super().__init__(params, defaults)
        self.base_optimizer = base_optimizer_cls(self.param_groups, **kwargs)

    @torch.no_grad()
    def first_step(self):
        grad_norm = torch.norm(
            torch.stack([p.grad.norm(2) for g in self.param_groups for p in g["params"] if p.grad is not None]), 2
        )
        for group in self.param_groups:
            scale = group["rho"] / (grad_norm + 1e-12)
            for p in group["params"]:
                if p.grad is None:
                    continue
                e_w = p.grad * scale
                p.add_(e_w)
                self.state[p]["e_w"] = e_w
        self.zero_grad()

    @torch.no_grad()
    def second_step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None or "e_w" not in self.state[p]:
                    continue
                p.sub_(self.state[p]["e_w"])
        self.base_optimizer.step()
        self.zero_grad()


class SAMformerLite(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.q = nn.Linear(L, d)
        self.k = nn.Linear(L, d)
        self.v = nn.Linear(L, L)
        self.out = nn.Linear(L, H)

    def forward(self, x):  # x: (B, C, L)
        mu = x.mean(-1, keepdim=True)
        sd = x.std(-1, keepdim=True) + 1e-5
        z = (x - mu) / sd
        att = torch.softmax(self.q(z) @ self.k(z).transpose(1, 2) / math.sqrt(self.q.out_features), -1)
        z = z + att @ self.v(z)
        return self.out(z) * sd + mu


def make_series(T=2400):
    t = torch.arange(T, dtype=torch.float32)
    base = torch.stack([torch.sin(2 * math.pi * t / p) for p in (24, 24, 12, 48, 36, 24, 60)])
    mix = torch.randn(C, C) * 0.3 + torch.eye(C)
    return mix @ base + 0.1 * torch.randn(C, T)


def main():
    s = make_series()
    starts = torch.arange(0, s.shape[1] - L - H)
    model = SAMformerLite()
    opt = SAM(model.parameters(), torch.optim.Adam, rho=0.5, lr=3e-3)
    loss_fn = nn.MSELoss()
    for step in range(150):
        idx = starts[torch.randint(0, len(starts) - 400, (32,))]
        x = torch.stack([s[:, i : i + L] for i in idx.tolist()])
        y = torch.stack([s[:, i + L : i + L + H] for i in idx.tolist()])
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.first_step()
        loss_fn(model(x), y).backward()
        opt.second_step()
        if step % 25 == 0 or step == 149:
            with torch.no_grad():
                vi = starts[-300:]
                xv = torch.stack([s[:, i : i + L] for i in vi.tolist()])
                yv = torch.stack([s[:, i + L : i + L + H] for i in vi.tolist()])
                val = loss_fn(model(xv), yv).item()
            print(f"step {step:3d} train_mse {loss.item():.4f} val_mse {val:.4f}")


if __name__ == "__main__":
    main()

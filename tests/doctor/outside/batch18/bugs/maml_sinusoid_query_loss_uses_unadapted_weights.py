"""MAML on sinusoid regression whose query loss is evaluated with the un-adapted network.

The meta-learner adapts a copy of the parameters on each task's support set
(fast weights built with autograd.grad(create_graph=True)), but the query loss
that drives the meta-update is computed by calling self.net(x_query), i.e. with
the original meta-parameters instead of the adapted fast weights.  The inner loop
therefore has no influence on the meta-gradient: the outer loop degenerates into
plain multi-task regression towards the average sinusoid (roughly the zero
function), and the learned initialization adapts poorly to new tasks.  The
meta-loss still decreases a little, so nothing looks broken.

Source: https://github.com/katerakelly/pytorch-maml/issues/15
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call

torch.manual_seed(0)
torch.set_num_threads(2)

META = {"inner_lr": 0.01, "inner_steps": 1, "outer_lr": 3e-3, "meta_batch": 5, "iterations": 250, "k_shot": 10}


def sample_task():
    amp = torch.empty(1).uniform_(0.1, 5.0)
    phase = torch.empty(1).uniform_(0, math.pi)

    def draw(n):
        x = torch.empty(n, 1).uniform_(-5, 5)
        return x, amp * torch.sin(x + phase)

    return draw


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(1, 40), nn.ReLU(), nn.Linear(40, 40), nn.ReLU(), nn.Linear(40, 1))

    def forward(self, x):
        return self.body(x)


class MAML:
    def __init__(self, net):
        self.net = net
        self.meta_opt = torch.optim.Adam(net.parameters(), lr=META["outer_lr"])

    def adapt(self, x, y, create_graph=True):
        fast = dict(self.net.named_parameters())
        for _ in range(META["inner_steps"]):
            loss = F.mse_loss(functional_call(self.net, fast, (x,)), y)
            grads = torch.autograd.grad(loss, list(fast.values()), create_graph=create_graph)
            fast = {n: p - META["inner_lr"] * g for (n, p), g in zip(fast.items(), grads)}
        return fast

    def meta_step(self):
        self.meta_opt.zero_grad()
        total = 0.0
        for _ in range(META["meta_batch"]):
            draw = sample_task()
            xs, ys = draw(META["k_shot"])
            xq, yq = draw(META["k_shot"])
            fast = self.adapt(xs, ys)
            loss_q = F.mse_loss(self.net(xq), yq)  # BUG-LINE
            (loss_q / META["meta_batch"]).backward()
            total += loss_q.item()
        self.meta_opt.step()
        return total / META["meta_batch"]

    def evaluate(self, n_tasks=40, steps=10):
        errs = []
        for _ in range(n_tasks):
            draw = sample_task()
            xs, ys = draw(META["k_shot"])
            xq, yq = draw(100)
            fast = dict((n, p.detach().clone().requires_grad_(True)) for n, p in self.net.named_parameters())
            for _ in range(steps):
                loss = F.mse_loss(functional_call(self.net, fast, (xs,)), ys)
                grads = torch.autograd.grad(loss, list(fast.values()))
                fast = {
                    n: (p - META["inner_lr"] * g).detach().requires_grad_(True)
                    for (n, p), g in zip(fast.items(), grads)
                }
            with torch.no_grad():
                errs.append(F.mse_loss(functional_call(self.net, fast, (xq,)), yq).item())
        return sum(errs) / len(errs)


def main():
    maml = MAML(Regressor())
    print(f"meta-test MSE after 10 adaptation steps (before meta-training): {maml.evaluate():.3f}")
    for it in range(META["iterations"]):
        l = maml.meta_step()
        if it % 50 == 0:
            print(f"iter {it:4d} meta query loss {l:.3f}")
    print(f"meta-test MSE after 10 adaptation steps: {maml.evaluate():.3f}")


if __name__ == "__main__":
    main()

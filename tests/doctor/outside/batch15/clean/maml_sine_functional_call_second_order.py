"""Second-order MAML on sine-wave regression using torch.func.functional_call.

Source: https://github.com/tristandeleu/pytorch-maml-rl/issues/8

In the thread the maintainer explains that the MAML inner update must be written as
plain tensor arithmetic (updated = param - step_size * grad) with
torch.autograd.grad(..., create_graph=True), so that the meta-update can
differentiate through it; a stock optimizer step in the inner loop would break the
graph. This program does exactly that: the inner loop never touches the module's
parameters, it builds a dict of adapted tensors and evaluates the model with
torch.func.functional_call. The second-order graph is kept on purpose and the outer
Adam optimizer only sees the meta-parameters. Tasks (amplitude, phase) and sample
points are drawn at random every step.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call

torch.manual_seed(0)
torch.set_num_threads(2)

model = nn.Sequential(nn.Linear(1, 40), nn.ReLU(), nn.Linear(40, 40), nn.ReLU(), nn.Linear(40, 1))
meta_opt = torch.optim.Adam(model.parameters(), lr=1e-3)
INNER_LR = 0.01


def sample_task():
    amp = torch.empty(1).uniform_(0.1, 5.0)
    phase = torch.empty(1).uniform_(0, math.pi)

    def draw(n):
        x = torch.empty(n, 1).uniform_(-5, 5)
        return x, amp * torch.sin(x + phase)

    return draw


for meta_step in range(1, 151):
    meta_opt.zero_grad()
    meta_loss = 0.0
    for _ in range(4):
        draw = sample_task()
        xs, ys = draw(10)
        xq, yq = draw(10)
        params = dict(model.named_parameters())
        support_loss = F.mse_loss(functional_call(model, params, (xs,)), ys)
        grads = torch.autograd.grad(support_loss, list(params.values()), create_graph=True)
        adapted = {n: p - INNER_LR * g for (n, p), g in zip(params.items(), grads)}
        meta_loss = meta_loss + F.mse_loss(functional_call(model, adapted, (xq,)), yq)
    meta_loss = meta_loss / 4
    meta_loss.backward()
    meta_opt.step()
    if meta_step % 30 == 0:
        print(f"meta step {meta_step} query loss after 1 inner step {meta_loss.item():.4f}")

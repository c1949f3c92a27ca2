"""MAML on sine regression where the inner-loop update is written through param.data.

Source: https://github.com/KanishJebaMathewM/Truxify/issues/13118

The report: a MAML implementation adapts a copy of the model by computing inner
gradients with autograd.grad(create_graph=True) and then doing
param.data -= inner_lr * grad. Writing through .data detaches the update from the
autograd graph, so the query loss computed with the adapted copy has no path back to
the meta-parameters. meta_loss.backward() then fills the adapted copy's .grad and
leaves the meta-model's .grad as None; the outer optimizer step silently skips every
parameter and the meta-model never trains, while the printed query loss still
fluctuates because tasks are random.
"""

import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

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


def inner_update(base, xs, ys):
    adapted = copy.deepcopy(base)
    loss = F.mse_loss(adapted(xs), ys)
    grads = torch.autograd.grad(loss, adapted.parameters(), create_graph=True)
    for p, g in zip(adapted.parameters(), grads):
        p.data -= INNER_LR * g  # BUG-LINE
    return adapted


for meta_step in range(1, 151):
    meta_opt.zero_grad()
    meta_loss = 0.0
    for _ in range(4):
        draw = sample_task()
        xs, ys = draw(10)
        xq, yq = draw(10)
        adapted = inner_update(model, xs, ys)
        meta_loss = meta_loss + F.mse_loss(adapted(xq), yq)
    meta_loss = meta_loss / 4
    meta_loss.backward()
    meta_opt.step()
    if meta_step % 30 == 0:
        print(f"meta step {meta_step} query loss {meta_loss.item():.4f}")

"""MAML on few-shot sine-wave regression with hand-written functional weights.

The inner-loop adaptation computes the task gradient with
torch.autograd.grad(loss, fast_weights) without create_graph=True. The adapted
weights are then built from gradients that are constants for autograd, so the
meta-gradient of the query loss ignores how the inner step depends on the
initial weights (no second-order term): the program silently trains first-order
MAML instead of MAML. The meta-loss still goes down, but the learned
initialisation adapts worse.

Source: https://github.com/kjaved0/mrcl/issues/15
"""

import math

import torch
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


def init_weights():
    ws = []
    for fan_in, fan_out in [(1, 40), (40, 40), (40, 1)]:
        w = torch.empty(fan_out, fan_in)
        torch.nn.init.kaiming_uniform_(w, a=math.sqrt(5))
        ws += [w.requires_grad_(), torch.zeros(fan_out, requires_grad=True)]
    return ws


def forward(x, ws):
    h = F.relu(F.linear(x, ws[0], ws[1]))
    h = F.relu(F.linear(h, ws[2], ws[3]))
    return F.linear(h, ws[4], ws[5])


def sample_task(n):
    amp = torch.empty(1).uniform_(0.1, 5.0)
    phase = torch.empty(1).uniform_(0, math.pi)
    x = torch.empty(n, 1).uniform_(-5, 5)
    return x, amp * torch.sin(x + phase)


weights = init_weights()
meta_opt = torch.optim.Adam(weights, lr=1e-3)
inner_lr, K, META_BATCH = 0.01, 10, 8

for it in range(400):
    meta_loss = 0.0
    for _ in range(META_BATCH):
        x, y = sample_task(2 * K)
        xs, ys, xq, yq = x[:K], y[:K], x[K:], y[K:]
        support_loss = F.mse_loss(forward(xs, weights), ys)
        grads = torch.autograd.grad(support_loss, weights)  # BUG-LINE
        fast = [w - inner_lr * g for w, g in zip(weights, grads)]
        meta_loss = meta_loss + F.mse_loss(forward(xq, fast), yq)
    meta_loss = meta_loss / META_BATCH
    meta_opt.zero_grad()
    meta_loss.backward()
    meta_opt.step()
    if it % 50 == 0 or it == 399:
        print(f"meta-iter {it:3d}  query loss after 1 step {meta_loss.item():.4f}")

"""MAML: for each task the inner-loop adaptation takes a gradient step with ``torch.autograd.grad(...,
create_graph=True)`` on functional copies of the weights, and the outer (meta) loss is backpropagated through
that inner step into the original parameters. Differentiating through a gradient is the point of the method.

Source: https://arxiv.org/abs/1703.03400
"""

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 1))
meta_opt = torch.optim.Adam(model.parameters(), lr=1e-3)
inner_lr = 0.05
for _meta_step in range(5):
    meta_loss = 0.0
    for _task in range(4):
        amp, phase = torch.rand(1) * 2 + 0.5, torch.rand(1) * 3
        xs, xq = torch.rand(10, 1) * 6 - 3, torch.rand(10, 1) * 6 - 3
        ys, yq = amp * torch.sin(xs + phase), amp * torch.sin(xq + phase)
        params = dict(model.named_parameters())
        support_loss = F.mse_loss(functional_call(model, params, (xs,)), ys)
        grads = torch.autograd.grad(support_loss, list(params.values()), create_graph=True)
        adapted = {n: p - inner_lr * g for (n, p), g in zip(params.items(), grads, strict=False)}
        meta_loss = meta_loss + F.mse_loss(functional_call(model, adapted, (xq,)), yq)
    meta_opt.zero_grad()
    (meta_loss / 4).backward()
    meta_opt.step()

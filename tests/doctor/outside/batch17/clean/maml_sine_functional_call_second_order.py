"""Second-order MAML on sine-wave regression tasks, using torch.func.functional_call for fast weights.

Unusual on purpose: the module's own parameters are never modified by the inner loop. Adapted
"fast" weights are plain tensors p - alpha * g computed with torch.autograd.grad(...,
create_graph=True), held in a dict and run through torch.func.functional_call. The query loss
of the adapted weights is back-propagated through the inner updates (Hessian-vector terms), so a
single outer backward differentiates through the inner gradient steps. Support-set gradients are
never written into .grad; only the outer (meta) optimizer steps the module. Modelled on the forum
thread about implementing MAML for a predefined nn.Module without rewriting it with F.linear:
gradients of the inner loss w.r.t. a copy of the parameters update that copy functionally
(p - lr * g), and the module is evaluated with the updated tensors.

Source: https://discuss.pytorch.org/t/another-way-to-implement-maml-model-agnostic-meta-learning/164439
"""

import math

import torch
import torch.nn as nn
from torch.func import functional_call

torch.manual_seed(0)
torch.set_num_threads(2)


def sample_task():
    amp = torch.empty(1).uniform_(0.1, 5.0)
    phase = torch.empty(1).uniform_(0, math.pi)

    def draw(k):
        x = torch.empty(k, 1).uniform_(-5, 5)
        return x, amp * torch.sin(x + phase)

    return draw


def adapt(model, params, x, y, inner_lr, steps):
    for _ in range(steps):
        loss = ((functional_call(model, params, (x,)) - y) ** 2).mean()
        grads = torch.autograd.grad(loss, list(params.values()), create_graph=True)
        params = {n: p - inner_lr * g for (n, p), g in zip(params.items(), grads)}
    return params


def main():
    model = nn.Sequential(nn.Linear(1, 40), nn.ReLU(), nn.Linear(40, 40), nn.ReLU(), nn.Linear(40, 1))
    meta_opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    inner_lr, k_shot, meta_batch = 0.01, 10, 5
    for it in range(120):
        meta_opt.zero_grad()
        total = 0.0
        for _ in range(meta_batch):
            draw = sample_task()
            xs, ys = draw(k_shot)
            xq, yq = draw(k_shot)
            fast = adapt(model, dict(model.named_parameters()), xs, ys, inner_lr, steps=1)
            q_loss = ((functional_call(model, fast, (xq,)) - yq) ** 2).mean() / meta_batch
            q_loss.backward()
            total += q_loss.item()
        meta_opt.step()
        if it % 30 == 0 or it == 119:
            torch.manual_seed(1000)
            draw = sample_task()
            xs, ys = draw(k_shot)
            xq, yq = draw(100)
            fast = adapt(model, dict(model.named_parameters()), xs, ys, inner_lr, steps=5)
            with torch.no_grad():
                pre = ((model(xq) - yq) ** 2).mean().item()
                post = ((functional_call(model, fast, (xq,)) - yq) ** 2).mean().item()
            torch.manual_seed(it + 1)
            print(f"iter {it:3d} meta_loss {total:.4f} eval pre {pre:.3f} post-5-steps {post:.3f}")


if __name__ == "__main__":
    main()

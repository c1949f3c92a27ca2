"""Magnitude pruning with torch.nn.utils.prune, then fine-tuning, on a tabular regression MLP.

Unusual on purpose: after dense training, global L1 unstructured pruning removes 70% of the Linear
weights. The module's `weight` becomes a plain attribute recomputed as weight_orig * weight_mask in
a forward pre-hook; the trainable Parameter is now `weight_orig`, which is the same Parameter
object the optimizer already holds, so the existing optimizer keeps working. Masked entries of
weight_orig still receive (zero-effect) updates but never reach the forward pass; the mask buffer
has no gradient. After fine-tuning, prune.remove folds the mask in permanently, and the sparsity is
checked. Modelled on the l1_unstructured documentation, which describes the name+'_orig'
parameter / name+'_mask' buffer reparametrisation.

Source: https://pytorch.org/docs/main/generated/torch.nn.utils.prune.l1_unstructured.html
"""

import torch
import torch.nn as nn
import torch.nn.utils.prune as prune

torch.manual_seed(0)
torch.set_num_threads(2)


def make_data(n=3000, d=20):
    x = torch.randn(n, d)
    y = 2 * x[:, 0] - x[:, 1] + 0.5 * x[:, 2] * x[:, 3] + torch.sin(2 * x[:, 4]) + 0.1 * torch.randn(n)
    return x, y.unsqueeze(1)


def run(model, opt, x, y, xv, yv, steps, tag):
    loss_fn = nn.MSELoss()
    for step in range(steps):
        idx = torch.randint(0, len(x), (128,))
        loss = loss_fn(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0 or step == steps - 1:
            with torch.no_grad():
                val = loss_fn(model(xv), yv).item()
            print(f"[{tag}] step {step:3d} loss {loss.item():.4f} val_mse {val:.4f}")


def main():
    x, y = make_data()
    xtr, ytr, xv, yv = x[:2500], y[:2500], x[2500:], y[2500:]
    model = nn.Sequential(nn.Linear(20, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 1))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    run(model, opt, xtr, ytr, xv, yv, 200, "dense")
    targets = [(m, "weight") for m in model if isinstance(m, nn.Linear)]
    prune.global_unstructured(targets, pruning_method=prune.L1Unstructured, amount=0.7)
    print(
        "params after pruning:",
        [n for n, _ in model.named_parameters()][:2],
        "buffers:",
        [n for n, _ in model.named_buffers()][:1],
    )
    run(model, opt, xtr, ytr, xv, yv, 150, "pruned-finetune")
    for m, name in targets:
        prune.remove(m, name)
    zeros = sum((m.weight == 0).sum().item() for m, _ in targets)
    total = sum(m.weight.numel() for m, _ in targets)
    print(f"final sparsity {zeros / total:.3f}")


if __name__ == "__main__":
    main()

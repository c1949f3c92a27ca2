"""A post-accumulate-grad hook meant to clip gradients clamps the weights instead.

To clip gradient values per parameter as soon as each gradient is ready, the
script registers ``clip_hook`` with ``Tensor.register_post_accumulate_grad_hook``
and writes the hook like a ``register_hook`` hook, treating its argument as the
gradient.  A post-accumulate-grad hook is called with the *parameter* itself
(the gradient lives in ``param.grad``), so ``arg.clamp_(-v, v)`` clamps the
weights in place after every backward, and the gradients are never clipped.
The weights are silently confined to [-0.05, 0.05]; the model still trains a
little, but its capacity is crippled and accuracy stays low.

Source: https://github.com/pytorch/pytorch/issues/187268
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

TRAIN_CFG = {"clip_value": 0.05, "lr": 2e-3, "steps": 120, "batch": 128}


def make_spirals(n=3000, k=4):
    t = torch.rand(n) * 3.0 + 0.5
    label = torch.randint(0, k, (n,))
    angle = t * 2.5 + label.float() * (2 * torch.pi / k)
    x = torch.stack([t * torch.cos(angle), t * torch.sin(angle)], 1) + 0.05 * torch.randn(n, 2)
    return x, label


class MLP(nn.Module):
    def __init__(self, k=4):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(2, 128),
            nn.ReLU(),
            nn.Linear(128, 128),
            nn.ReLU(),
            nn.Linear(128, 128),
            nn.ReLU(),
            nn.Linear(128, k),
        )

    def forward(self, x):
        return self.layers(x)


def install_grad_value_clipping(model, clip_value):
    def clip_hook(grad):
        grad.clamp_(-clip_value, clip_value)

    handles = []
    for p in model.parameters():
        handles.append(p.register_post_accumulate_grad_hook(clip_hook))  # BUG-LINE
    return handles


def main():
    x, y = make_spirals()
    model = MLP()
    install_grad_value_clipping(model, TRAIN_CFG["clip_value"])
    opt = torch.optim.Adam(model.parameters(), lr=TRAIN_CFG["lr"])
    for step in range(TRAIN_CFG["steps"]):
        idx = torch.randint(0, x.shape[0], (TRAIN_CFG["batch"],))
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 40 == 0 or step == TRAIN_CFG["steps"] - 1:
            wmax = max(p.detach().abs().max().item() for p in model.parameters())
            print(f"step {step:3d} loss {loss.item():.4f} max|w| {wmax:.3f}")
    with torch.no_grad():
        acc = (model(x).argmax(-1) == y).float().mean().item()
    print(f"train accuracy {acc:.3f}")


if __name__ == "__main__":
    main()

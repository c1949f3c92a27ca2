"""Quantization-aware training with a straight-through custom autograd.Function (correct).

Unusual but correct: the forward pass rounds activations to a few levels with a
custom ``torch.autograd.Function`` whose ``backward`` passes the incoming
gradient straight through (masked to the clipping range), i.e. it returns
``grad_output * mask`` rather than a constant, and returns ``None`` for the
non-tensor argument.  The Function is applied to a non-leaf tensor inside the
model, and its backward really runs for every step (the report was about a
custom backward that seemed not to be called).  ``gradcheck`` is not applicable
to the rounding, so a hand check compares the custom gradient with the expected
masked identity.

Source: https://github.com/pytorch/pytorch/issues/4714
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


class RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, levels):
        ctx.save_for_backward(x)
        xc = x.clamp(-1.0, 1.0)
        scale = (levels - 1) / 2.0
        return torch.round((xc + 1.0) * scale) / scale - 1.0

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        mask = (x.abs() <= 1.0).to(grad_output.dtype)
        return grad_output * mask, None


class QuantMLP(nn.Module):
    def __init__(self, levels=4):
        super().__init__()
        self.levels = levels
        self.fc1 = nn.Linear(8, 64)
        self.fc2 = nn.Linear(64, 64)
        self.out = nn.Linear(64, 2)

    def forward(self, x):
        h = RoundSTE.apply(torch.tanh(self.fc1(x)), self.levels)
        h = RoundSTE.apply(torch.tanh(self.fc2(h)), self.levels)
        return self.out(h)


def check_ste():
    x = torch.tensor([-1.5, -0.4, 0.2, 0.9, 1.3], requires_grad=True)
    y = RoundSTE.apply(x * 1.0, 4)
    (y * torch.arange(1.0, 6.0)).sum().backward()
    expected = torch.tensor([0.0, 2.0, 3.0, 4.0, 0.0])
    print(f"STE grad {x.grad.tolist()} matches expected: {torch.allclose(x.grad, expected)}")


def main():
    check_ste()
    x = torch.randn(2048, 8)
    y = ((x[:, 0] * x[:, 1] > 0) ^ (x[:, 2] > 0.5)).long()
    model = QuantMLP()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(200):
        idx = torch.randint(0, 2048, (128,))
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 40 == 0 or step == 199:
            print(f"step {step:3d} loss {loss.item():.4f} fc1 grad norm {model.fc1.weight.grad.norm().item():.4f}")
    with torch.no_grad():
        print(f"train accuracy {(model(x).argmax(-1) == y).float().mean().item():.3f}")


if __name__ == "__main__":
    main()

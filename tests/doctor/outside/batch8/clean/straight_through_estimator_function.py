"""Binarised activations trained with a straight-through estimator autograd.Function.

The forward pass applies sign(), whose true derivative is zero almost
everywhere; the custom backward passes the incoming gradient through unchanged
(clipped to |x| <= 1).  The non-differentiable op therefore does not block
training of the layers before it.
Source: https://bitorch.readthedocs.io/en/latest/_autosummary/bitorch.quantizations.base.STE.html
"""

import torch
import torch.nn as nn

torch.manual_seed(0)


class SignSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sign(x)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * (x.abs() <= 1).to(grad_out.dtype)


class BinaryNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 64)
        self.fc2 = nn.Linear(64, 2)

    def forward(self, x):
        return self.fc2(SignSTE.apply(self.fc1(x)))


model = BinaryNet()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(128, 16)
y = (x[:, 0] * x[:, 1] > 0).long()
for _step in range(8):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f} fc1 grad norm {model.fc1.weight.grad.norm():.4f}")

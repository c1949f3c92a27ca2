"""A hand-written autograd Function (ReLU with a custom backward) used inside a
small network. forward saves the input with ctx.save_for_backward and backward
returns the masked upstream gradient, exactly matching the analytic derivative,
so training through it is correct even though no built-in op is used.

Source: https://pytorch.org/tutorials/beginner/examples_autograd/two_layer_net_custom_function.html
"""

import torch
from torch import nn


class MyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inp):
        ctx.save_for_backward(inp)
        return inp.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (inp,) = ctx.saved_tensors
        grad = grad_output.clone()
        grad[inp < 0] = 0
        return grad


torch.manual_seed(0)
l1, l2 = nn.Linear(6, 32), nn.Linear(32, 1)
opt = torch.optim.SGD(list(l1.parameters()) + list(l2.parameters()), lr=0.05)
x = torch.randn(64, 6)
y = torch.sin(x).sum(1, keepdim=True)
for _step in range(6):
    opt.zero_grad()
    loss = nn.functional.mse_loss(l2(MyReLU.apply(l1(x))), y)
    loss.backward()
    opt.step()
print("loss", loss.item())

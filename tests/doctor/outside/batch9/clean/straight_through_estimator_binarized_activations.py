"""Binarised activations trained with a straight-through estimator.

Unusual: the forward pass uses sign(), whose true gradient is zero almost everywhere; a custom
autograd Function passes the incoming gradient through unchanged (clipped to |x|<=1) instead.
Source: https://github.com/kornia/kornia/pull/1666
"""

import torch


class SignSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sign(x)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * (x.abs() <= 1).to(grad_out.dtype)


torch.manual_seed(0)
l1, l2 = torch.nn.Linear(12, 32), torch.nn.Linear(32, 2)
opt = torch.optim.Adam(list(l1.parameters()) + list(l2.parameters()), lr=1e-2)
for _step in range(8):
    x = torch.randn(32, 12)
    y = (x[:, 0] > 0).long()
    h = SignSTE.apply(l1(x))
    loss = torch.nn.functional.cross_entropy(l2(h), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")

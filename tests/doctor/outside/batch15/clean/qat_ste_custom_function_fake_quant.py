"""Quantization-aware training of an MLP with a straight-through fake-quantizer.

Source: https://discuss.pytorch.org/t/how-does-ste-realize-in-quantification-aware-training/154007

The answer in the thread says to pass the tensor through a custom
torch.autograd.Function whose forward implements the (non-differentiable) rounding
quantizer and whose backward simply returns the upstream gradient. This program does
that for 4-bit weights and activations: the forward of FakeQuantSTE uses
torch.round and clamp, and the backward passes grad_output straight through inside
the clipping range (zero outside it). Unusual on purpose: the forward is not
differentiable, the backward is deliberately not its derivative, the float "latent"
weights are what the optimizer updates while the network only ever computes with
their quantized copies, and the per-tensor scale is recomputed under no_grad.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

BITS = 4
QMAX = 2 ** (BITS - 1) - 1


class FakeQuantSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x, scale)
        q = torch.clamp(torch.round(x / scale), -QMAX - 1, QMAX)
        return q * scale

    @staticmethod
    def backward(ctx, grad_output):
        x, scale = ctx.saved_tensors
        inside = (x / scale >= -QMAX - 1) & (x / scale <= QMAX)
        return grad_output * inside.to(grad_output.dtype), None


def fake_quant(x):
    with torch.no_grad():
        scale = x.abs().max().clamp(min=1e-8) / QMAX
    return FakeQuantSTE.apply(x, scale)


class QLinear(nn.Linear):
    def forward(self, x):
        return F.linear(fake_quant(x), fake_quant(self.weight), self.bias)


model = nn.Sequential(QLinear(20, 64), nn.ReLU(), QLinear(64, 64), nn.ReLU(), QLinear(64, 3))
X = torch.randn(1024, 20)
y = (X[:, :3] * torch.tensor([1.0, -1.0, 0.5])).argmax(1)
opt = torch.optim.Adam(model.parameters(), lr=2e-3)

for epoch in range(1, 13):
    for idx in torch.randperm(1024).split(64):
        loss = F.cross_entropy(model(X[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    if epoch % 3 == 0:
        with torch.no_grad():
            acc = (model(X).argmax(1) == y).float().mean()
        print(f"epoch {epoch} loss {loss.item():.4f} train acc (quantized) {acc.item():.3f}")

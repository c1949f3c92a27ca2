"""Temperature-scaled classifier using a custom autograd MulConstant whose backward
forgets the constant.

Source: https://github.com/zergtant/pytorch-handbook/issues/69

The report concerns the handbook's "extending autograd" MulConstant example: forward
returns tensor * constant but backward returns grad_output unchanged; commenters
point out it must be grad_output * ctx.constant to agree with the built-in
multiplication. Used inside a model, the gradient reaching everything before the
op is off by a factor of 1/constant (here an inverse temperature of 0.1, so the
gradients are 10x too large and the effective learning rate of the whole body is
10x what was chosen). No error occurs; the loss falls but noisily and the model
ends up worse than the same model written with an ordinary multiplication.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


class MulConstant(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, constant):
        ctx.constant = constant
        return tensor * constant

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, None  # BUG-LINE


class ScaledClassifier(nn.Module):
    def __init__(self, inv_temperature=0.1):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 5))
        self.inv_temperature = inv_temperature

    def forward(self, x):
        return MulConstant.apply(self.body(x), self.inv_temperature)


X = torch.randn(2048, 20)
y = (X[:, :5] + 0.3 * torch.randn(2048, 5)).argmax(1)
model = ScaledClassifier()
opt = torch.optim.SGD(model.parameters(), lr=0.5)

for epoch in range(1, 16):
    for idx in torch.randperm(2048).split(128):
        loss = F.cross_entropy(model(X[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    if epoch % 3 == 0:
        with torch.no_grad():
            acc = (model(X).argmax(1) == y).float().mean()
        print(f"epoch {epoch} loss {loss.item():.4f} acc {acc.item():.3f}")

"""Image classifier (small MLP on synthetic 12x12 "stripe orientation" images) that uses a hand-written sigmoid
activation implemented as a torch.autograd.Function to save memory. Its backward returns the local derivative
y * (1 - y) but forgets to multiply by the incoming grad_output, so the chain rule is broken at every
activation: the gradients reaching the first layer no longer depend on the loss at all. Autograd cannot check
a custom backward (gradcheck is never called), so training runs with wrong gradients and no message.
Source: https://github.com/apache/mxnet/issues/9872
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


class MySigmoid(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = 1.0 / (1.0 + torch.exp(-x))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return y * (1 - y)  # BUG-LINE


def stripes(n):
    y = torch.randint(0, 3, (n,))
    grid = torch.arange(12).float()
    x = torch.randn(n, 12, 12) * 0.5
    for i in range(n):
        k = int(y[i])
        if k == 0:
            x[i] += torch.sin(grid)[None, :]
        elif k == 1:
            x[i] += torch.sin(grid)[:, None]
        else:
            x[i] += torch.sin(grid[:, None] + grid[None, :])
    return x.view(n, -1), y


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(144, 64)
        self.l2 = nn.Linear(64, 3)

    def forward(self, x):
        return self.l2(MySigmoid.apply(self.l1(x)))


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.5)
for step in range(100):
    x, y = stripes(64)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0:
        print(f"step {step} loss {loss.item():.4f}")
xv, yv = stripes(300)
with torch.no_grad():
    print("val acc:", round((model(xv).argmax(1) == yv).float().mean().item(), 4))

"""Domain-adversarial training with a custom torch.autograd.Function: the gradient reversal layer is the
identity in forward and multiplies the incoming gradient by -lambda in backward, so the feature extractor is
trained to confuse the domain classifier. Negative gradients through this layer are intended.

Source: https://pytorch.org/docs/stable/notes/extending.html
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lambd):
        ctx.lambd = lambd
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return -ctx.lambd * grad_output, None


features = nn.Sequential(nn.Linear(16, 32), nn.ReLU())
label_head = nn.Linear(32, 3)
domain_head = nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 2))
params = [*features.parameters(), *label_head.parameters(), *domain_head.parameters()]
opt = torch.optim.SGD(params, lr=0.05, momentum=0.9)
X, y, d = torch.randn(160, 16), torch.randint(0, 3, (160,)), torch.randint(0, 2, (160,))
for i in range(0, 160, 32):
    h = features(X[i : i + 32])
    loss = F.cross_entropy(label_head(h), y[i : i + 32])
    loss = loss + F.cross_entropy(domain_head(GradReverse.apply(h, 0.3)), d[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()

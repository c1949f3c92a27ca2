"""Domain-adversarial training with a gradient reversal layer (a custom autograd Function that is the identity
forward and negates the gradient backward): one optimizer over the feature extractor, the label classifier and
the domain discriminator, one backward of the summed loss. Correct by design: the extractor gets the reversed
domain gradient.

Source: https://github.com/intel/e2eAIOK/pull/198
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lam):
        ctx.lam = lam
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return -ctx.lam * grad, None


features = nn.Sequential(nn.Linear(10, 32), nn.ReLU())
classifier = nn.Linear(32, 3)
domain = nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.SGD([*features.parameters(), *classifier.parameters(), *domain.parameters()], lr=0.05)
src_x, src_y = torch.randn(192, 10), torch.randint(0, 3, (192,))
tgt_x = torch.randn(192, 10) + 0.5
for i in range(0, 192, 32):
    hs, ht = features(src_x[i : i + 32]), features(tgt_x[i : i + 32])
    cls_loss = F.cross_entropy(classifier(hs), src_y[i : i + 32])
    d_in = GradReverse.apply(torch.cat([hs, ht]), 0.3)
    d_target = torch.cat([torch.zeros(32, 1), torch.ones(32, 1)])
    dom_loss = F.binary_cross_entropy_with_logits(domain(d_in), d_target)
    opt.zero_grad()
    (cls_loss + dom_loss).backward()
    opt.step()

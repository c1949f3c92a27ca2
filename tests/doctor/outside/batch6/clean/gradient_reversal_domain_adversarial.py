"""Domain-adversarial training (DANN): a custom autograd Function passes features through unchanged in the
forward pass and multiplies the gradient by -lambda in the backward pass, so the feature extractor is trained
to *confuse* the domain classifier while the classifier itself learns normally. The sign flip is intended.

Source: https://arxiv.org/abs/1409.7495
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


features = nn.Sequential(nn.Linear(16, 32), nn.ReLU())
label_head = nn.Linear(32, 3)
domain_head = nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 1))
params = list(features.parameters()) + list(label_head.parameters()) + list(domain_head.parameters())
opt = torch.optim.SGD(params, lr=0.05, momentum=0.9)
src_x, src_y = torch.randn(128, 16), torch.randint(0, 3, (128,))
tgt_x = torch.randn(128, 16) + 0.5
for i in range(0, 128, 32):
    fs, ft = features(src_x[i : i + 32]), features(tgt_x[i : i + 32])
    cls_loss = F.cross_entropy(label_head(fs), src_y[i : i + 32])
    dom_logits = domain_head(GradReverse.apply(torch.cat([fs, ft]), 0.3))
    dom_labels = torch.cat([torch.zeros(32, 1), torch.ones(32, 1)])
    loss = cls_loss + F.binary_cross_entropy_with_logits(dom_logits, dom_labels)
    opt.zero_grad()
    loss.backward()
    opt.step()

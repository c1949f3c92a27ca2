"""Domain-adversarial training with a gradient reversal layer (DANN).

Unusual: a custom autograd Function returns the NEGATED gradient on purpose, so the feature
extractor is updated to maximise the domain classifier's loss while the classifier minimises it.
Source: https://github.com/facebookresearch/DomainBed/issues/143
"""

import torch
import torch.nn.functional as F


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lam):
        ctx.lam = lam
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_out):
        return -ctx.lam * grad_out, None


torch.manual_seed(0)
feat = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU())
cls_head = torch.nn.Linear(32, 3)
dom_head = torch.nn.Linear(32, 2)
params = list(feat.parameters()) + list(cls_head.parameters()) + list(dom_head.parameters())
opt = torch.optim.SGD(params, lr=0.05, momentum=0.9)
for _step in range(8):
    xs, ys = torch.randn(16, 10), torch.randint(0, 3, (16,))
    xt = torch.randn(16, 10) + 1.0
    fs, ft = feat(xs), feat(xt)
    cls_loss = F.cross_entropy(cls_head(fs), ys)
    f_all = GradReverse.apply(torch.cat([fs, ft]), 0.5)
    dom_y = torch.cat([torch.zeros(16), torch.ones(16)]).long()
    dom_loss = F.cross_entropy(dom_head(f_all), dom_y)
    loss = cls_loss + dom_loss
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"cls {cls_loss.item():.4f} dom {dom_loss.item():.4f}")

"""Domain-adversarial training (DANN) for unsupervised domain adaptation between two
synthetic image domains.

Unusual but correct: a custom torch.autograd.Function is the identity in the forward
pass and multiplies the incoming gradient by -lambda in backward, placed between the
shared feature extractor and the domain classifier. The domain classifier therefore
learns to separate domains while the feature extractor receives the reversed gradient
and learns domain-invariant features, all from a single loss.backward() and a single
optimizer. lambda ramps from 0 to 1 with the DANN schedule 2/(1+exp(-10p)) - 1.
Forward returns x.view_as(x) so the Function has a real output node.

Source: https://github.com/pytorch/pytorch/issues/1110
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lambd):
        ctx.lambd = lambd
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.neg() * ctx.lambd, None


def grad_reverse(x, lambd):
    return GradReverse.apply(x, lambd)


class DANN(nn.Module):
    def __init__(self, d_in=3 * 12 * 12, n_classes=5):
        super().__init__()
        self.features = nn.Sequential(nn.Flatten(), nn.Linear(d_in, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU())
        self.label_clf = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, n_classes))
        self.domain_clf = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, x, lambd):
        f = self.features(x)
        return self.label_clf(f), self.domain_clf(grad_reverse(f, lambd)).squeeze(1)


def make_domain(n, protos, shift, gain, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, protos.size(0), (n,), generator=g)
    x = protos[y] + 1.5 * torch.randn(n, *protos.shape[1:], generator=g)
    return x * gain + shift, y


def main():
    protos = torch.randn(5, 3, 12, 12)
    xs, ys = make_domain(2048, protos, shift=0.0, gain=1.0, seed=1)
    xt, yt = make_domain(2048, protos, shift=torch.linspace(-1, 1, 3)[:, None, None], gain=1.5, seed=2)
    model = DANN()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    steps = 100
    for step in range(steps):
        p = step / steps
        lambd = 2.0 / (1.0 + math.exp(-10 * p)) - 1.0
        i_s = torch.randint(0, len(xs), (64,))
        i_t = torch.randint(0, len(xt), (64,))
        x = torch.cat([xs[i_s], xt[i_t]])
        dom = torch.cat([torch.zeros(64), torch.ones(64)])
        logits, dom_logits = model(x, lambd)
        cls_loss = F.cross_entropy(logits[:64], ys[i_s])
        dom_loss = F.binary_cross_entropy_with_logits(dom_logits, dom)
        loss = cls_loss + dom_loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0 or step == steps - 1:
            with torch.no_grad():
                acc_t = (model(xt[:512], 0.0)[0].argmax(1) == yt[:512]).float().mean().item()
            print(
                f"step {step:3d} lambda {lambd:.2f} cls {cls_loss.item():.4f} dom {dom_loss.item():.4f} target_acc {acc_t:.3f}"
            )


if __name__ == "__main__":
    main()

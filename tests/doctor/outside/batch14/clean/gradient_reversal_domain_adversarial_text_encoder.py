"""Domain-adversarial text classifier with a gradient-reversal layer written as a custom
torch.autograd.Function.

Unusual but correct: the encoder feeds two heads. The sentiment head is trained normally. The
domain head sits behind GradReverse, whose forward is the identity and whose backward multiplies
the incoming gradient by -lambda. One loss.backward() on (task loss + domain loss) therefore
trains the domain head to recognise the domain while pushing the encoder to make the domains
indistinguishable. lambda ramps up with the usual 2/(1+exp(-10p)) - 1 schedule; target-domain
sentences have no sentiment labels and only contribute to the domain loss.

Source: https://arxiv.org/abs/1505.07818
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, VOCAB, MAXLEN, E, BATCH, STEPS = 0, 60, 12, 32, 32, 200


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lam):
        ctx.lam = lam
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_out):
        return -ctx.lam * grad_out, None


def make_domain(n, domain):
    # sentiment words 1..19 positive, 20..39 negative; domain-specific filler words
    filler_lo = 40 if domain == 0 else 50
    y = torch.randint(0, 2, (n,))
    x = torch.randint(filler_lo, filler_lo + 10, (n, MAXLEN))
    senti = torch.where(y[:, None] == 1, torch.randint(1, 20, (n, 3)), torch.randint(20, 40, (n, 3)))
    x[:, :3] = senti
    x = x[:, torch.randperm(MAXLEN)]
    return x, y


class DANN(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(VOCAB, E, mode="mean")
        self.enc = nn.Sequential(nn.Linear(E, 32), nn.ReLU())
        self.task = nn.Linear(32, 2)
        self.domain = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, x, lam):
        z = self.enc(self.emb(x))
        return self.task(z), self.domain(GradReverse.apply(z, lam))


model = DANN()
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for step in range(STEPS):
    p = step / STEPS
    lam = 2.0 / (1.0 + math.exp(-10 * p)) - 1.0
    xs, ys = make_domain(BATCH, 0)
    xt, _ = make_domain(BATCH, 1)
    task_logits, dom_s = model(xs, lam)
    _, dom_t = model(xt, lam)
    dom_logits = torch.cat([dom_s, dom_t])
    dom_labels = torch.cat([torch.zeros(BATCH), torch.ones(BATCH)]).long()
    loss = F.cross_entropy(task_logits, ys) + F.cross_entropy(dom_logits, dom_labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 40 == 0:
        print(f"step {step:3d} lambda {lam:.2f} loss {loss.item():.4f}")

with torch.no_grad():
    xt, yt = make_domain(512, 1)
    task_logits, _ = model(xt, 0.0)
    print(f"target-domain sentiment accuracy {(task_logits.argmax(-1) == yt).float().mean().item():.3f}")

"""Keyword spotting on synthetic filterbank features (1-D CNN over 40 mel bins x 40 frames, 5
keywords) trained with the Lookahead optimizer wrapped around plain SGD with momentum: the inner
("fast") optimizer takes k=5 ordinary steps, after which a separate set of "slow" weights moves a
fraction alpha=0.5 toward the fast weights and the fast weights are reset to the slow ones. The
in-place copying of parameter data between the two weight sets after optimizer.step(), outside
autograd, is the algorithm rather than a bug.

Source: https://arxiv.org/abs/1907.08610
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)

MELS, FRAMES, KW = 40, 40, 5
PATTERNS = torch.randn(KW, MELS, 10)


def make_batch(n):
    y = torch.randint(0, KW, (n,))
    x = torch.randn(n, MELS, FRAMES)
    for i, c in enumerate(y.tolist()):
        t0 = int(torch.randint(0, FRAMES - 10, (1,)))
        x[i, :, t0 : t0 + 10] += PATTERNS[c]
    return x, y


class Lookahead:
    def __init__(self, inner, k=5, alpha=0.5):
        self.inner, self.k, self.alpha, self.counter = inner, k, alpha, 0
        self.slow = [[p.detach().clone() for p in g["params"]] for g in inner.param_groups]

    def zero_grad(self):
        self.inner.zero_grad()

    @torch.no_grad()
    def step(self):
        self.inner.step()
        self.counter += 1
        if self.counter % self.k == 0:
            for group, slow_group in zip(self.inner.param_groups, self.slow):
                for p, s in zip(group["params"], slow_group):
                    s.add_(p - s, alpha=self.alpha)
                    p.copy_(s)


model = nn.Sequential(
    nn.Conv1d(MELS, 48, 5, padding=2),
    nn.ReLU(),
    nn.Conv1d(48, 48, 5, padding=2),
    nn.ReLU(),
    nn.AdaptiveMaxPool1d(1),
    nn.Flatten(),
    nn.Linear(48, KW),
)
opt = Lookahead(torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9), k=5, alpha=0.5)
for step in range(60):
    x, y = make_batch(32)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 15 == 0:
        print(f"step {step} loss {loss.item():.4f}")

with torch.no_grad():
    x, y = make_batch(400)
    print(f"final accuracy {(model(x).argmax(1) == y).float().mean().item():.3f}")

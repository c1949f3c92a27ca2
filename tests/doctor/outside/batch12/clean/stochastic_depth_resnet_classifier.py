"""Image classification with a small residual CNN trained with stochastic depth: during training
each residual block's branch is dropped for the whole batch with a depth-dependent probability
(linearly increasing to 0.3 for the last block) and the block becomes the identity, so some
layers receive no gradient on some steps; at evaluation every branch is kept and scaled by its
survival probability. Randomly skipped layers, parameters with missing gradients on some steps
and the eval-time rescaling are the intended technique.

Source: https://arxiv.org/abs/1603.09382
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)

CLASSES = 6


def make_batch(n):
    y = torch.randint(0, CLASSES, (n,))
    xx = torch.linspace(0, 3.14, 16)
    freq = (y + 1).float()[:, None, None]
    grid = torch.sin(freq * xx[None, :, None] + freq * 0.5 * xx[None, None, :])
    return (grid + 0.5 * torch.randn(n, 16, 16))[:, None], y


class Block(nn.Module):
    def __init__(self, c, survival):
        super().__init__()
        self.survival = survival
        self.branch = nn.Sequential(
            nn.Conv2d(c, c, 3, padding=1),
            nn.BatchNorm2d(c),
            nn.ReLU(),
            nn.Conv2d(c, c, 3, padding=1),
            nn.BatchNorm2d(c),
        )

    def forward(self, x):
        if self.training:
            if torch.rand(1).item() > self.survival:
                return x
            return F.relu(x + self.branch(x))
        return F.relu(x + self.survival * self.branch(x))


class StochasticDepthNet(nn.Module):
    def __init__(self, depth=4, c=24):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU())
        self.blocks = nn.Sequential(*[Block(c, 1.0 - 0.3 * (i + 1) / depth) for i in range(depth)])
        self.head = nn.Linear(c, CLASSES)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


model = StochasticDepthNet()
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
for step in range(50):
    x, y = make_batch(32)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f}")

model.eval()
with torch.no_grad():
    x, y = make_batch(300)
    print(f"final accuracy {(model(x).argmax(1) == y).float().mean().item():.3f}")

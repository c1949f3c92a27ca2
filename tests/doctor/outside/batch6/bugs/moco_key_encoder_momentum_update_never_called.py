"""In a MoCo-style contrastive model the momentum update of the key encoder was commented out of ``forward``
by accident. The key encoder is frozen at its random initialisation, so the query encoder is trained to match
random-projection keys; the InfoNCE loss still falls and nothing fails.

Source: https://github.com/ligerfotis/mvitac/issues/2
"""

import copy

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class MoCo(nn.Module):
    def __init__(self, m=0.99, tau=0.1, K=256):
        super().__init__()
        self.q = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 16))
        self.k = copy.deepcopy(self.q)
        for p in self.k.parameters():
            p.requires_grad = False
        self.m, self.tau = m, tau
        self.register_buffer("queue", F.normalize(torch.randn(K, 16), dim=1))

    @torch.no_grad()
    def momentum_update(self):
        for pq, pk in zip(self.q.parameters(), self.k.parameters(), strict=False):
            pk.mul_(self.m).add_(pq.detach(), alpha=1 - self.m)

    def forward(self, x1, x2):
        q = F.normalize(self.q(x1), dim=1)
        pass  # self.momentum_update()  # BUG-LINE
        with torch.no_grad():
            k = F.normalize(self.k(x2), dim=1)
        logits = torch.cat([(q * k).sum(1, keepdim=True), q @ self.queue.t()], dim=1) / self.tau
        self.queue = torch.cat([k, self.queue])[: self.queue.size(0)]
        return F.cross_entropy(logits, torch.zeros(x1.size(0), dtype=torch.long))


model = MoCo()
opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05, momentum=0.9)
data = torch.randn(256, 32)
for i in range(0, 256, 32):
    x = data[i : i + 32]
    loss = model(x + 0.1 * torch.randn_like(x), x + 0.1 * torch.randn_like(x))
    opt.zero_grad()
    loss.backward()
    opt.step()

"""Tiny ViT on an imbalanced synthetic dataset, balanced with WeightedRandomSampler.

Unusual but correct: the sampler draws with replacement=True and num_samples equal to
the dataset size, so minority-class images are repeated within an "epoch" and some
majority images are never seen in that epoch -- that is the documented behaviour
(the issue discusses how WeightedRandomSampler differs from other samplers), not a
data-loading bug. DropPath (stochastic depth) is applied only when self.training, and
evaluation uses test-time augmentation: probabilities of the image and of its
horizontal flip are averaged (softmax over the class axis) before argmax.

Source: https://github.com/pytorch/pytorch/issues/9171
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler

torch.manual_seed(0)
torch.set_num_threads(2)

g = torch.Generator().manual_seed(1)
protos = torch.randn(3, 3, 8, 8, generator=g)
protos = (protos + protos.flip(-1)) / 2
counts = [400, 60, 20]
y_all = torch.cat([torch.full((c,), k) for k, c in enumerate(counts)])
x_all = protos[y_all] + 1.0 * torch.randn(len(y_all), 3, 8, 8, generator=g)
class_w = 1.0 / torch.tensor(counts, dtype=torch.double)
sampler = WeightedRandomSampler(
    class_w[y_all], num_samples=len(y_all), replacement=True, generator=torch.Generator().manual_seed(2)
)
loader = DataLoader(TensorDataset(x_all, y_all), batch_size=48, sampler=sampler)


class DropPath(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        if self.p == 0.0 or not self.training:
            return x
        keep = 1 - self.p
        return x * x.new_empty(x.shape[0], 1, 1).bernoulli_(keep) / keep


class ViT(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.patch = nn.Conv2d(3, d, 4, stride=4)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.pos = nn.Parameter(torch.randn(1, 5, d) * 0.02)
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 64), nn.GELU(), nn.Linear(64, d))
        self.dp = DropPath(0.2)
        self.head = nn.Linear(d, 3)

    def forward(self, x):
        t = self.patch(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls.expand(len(t), -1, -1), t], 1) + self.pos
        h = self.norm1(t)
        t = t + self.dp(self.attn(h, h, h, need_weights=False)[0])
        t = t + self.dp(self.mlp(self.norm2(t)))
        return self.head(t[:, 0])


model = ViT()
opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.05)
for epoch in range(4):
    model.train()
    seen = torch.zeros(3)
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        seen += torch.bincount(y, minlength=3)
    print(f"epoch {epoch} loss {loss.item():.3f} class counts drawn {seen.tolist()}")

model.eval()
with torch.no_grad():
    xt = protos[torch.tensor([0, 1, 2] * 20)] + 1.0 * torch.randn(60, 3, 8, 8)
    yt = torch.tensor([0, 1, 2] * 20)
    prob = (model(xt).softmax(dim=1) + model(xt.flip(-1)).softmax(dim=1)) / 2
print("balanced test acc with flip-TTA", (prob.argmax(1) == yt).float().mean().item())

"""Tiny ViT (patch embedding + transformer blocks) with stochastic depth (DropPath).

The hand-written DropPath only returns the identity when drop_prob == 0; it never checks
self.training. After model.eval() the residual branches are still dropped at random and
rescaled, so evaluation outputs are stochastic and accuracy is lower and noisy. Training
is unaffected and the training loss falls normally.

Source: https://github.com/WangFeng18/Swin-Transformer/issues/7
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

g = torch.Generator().manual_seed(1)
protos = torch.randn(4, 3, 8, 8, generator=g)
y_all = torch.randint(0, 4, (768,), generator=g)
x_all = protos[y_all] + 1.0 * torch.randn(768, 3, 8, 8, generator=g)


class DropPath(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        if self.p == 0.0:  # BUG-LINE
            return x
        keep = 1.0 - self.p
        mask = x.new_empty(x.shape[0], 1, 1).bernoulli_(keep)
        return x * mask / keep


class Block(nn.Module):
    def __init__(self, d, p):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.dp = DropPath(p)

    def forward(self, x):
        h = self.n1(x)
        x = x + self.dp(self.attn(h, h, h, need_weights=False)[0])
        return x + self.dp(self.mlp(self.n2(x)))


class ViT(nn.Module):
    def __init__(self, d=32, depth=3):
        super().__init__()
        self.patch = nn.Conv2d(3, d, 4, stride=4)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.pos = nn.Parameter(torch.randn(1, 5, d) * 0.02)
        self.blocks = nn.Sequential(*[Block(d, 0.4 * (i + 1) / depth) for i in range(depth)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, 4)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        return self.head(self.norm(self.blocks(x))[:, 0])


model = ViT()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
for step in range(60):
    model.train()
    i = torch.randint(0, 640, (32,))
    loss = F.cross_entropy(model(x_all[i]), y_all[i])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 15 == 0:
        print(f"step {step} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    a = model(x_all[640:]).argmax(-1)
    b = model(x_all[640:]).argmax(-1)
print(
    "eval acc", (a == y_all[640:]).float().mean().item(), "agreement of two eval passes", (a == b).float().mean().item()
)

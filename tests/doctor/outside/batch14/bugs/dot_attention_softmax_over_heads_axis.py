"""Transformer tagger with a hand-written multi-head dot-product attention module.

Task: tag each token with the token immediately before it (needs attention). Bug: the
attention scores have shape (batch, heads, query, key) but the softmax is taken over dim=1,
i.e. across the heads instead of across the keys. Each head's "attention" row no longer sums
to one over the keys; a query mixes all keys with weights that only compete with the other
heads. No shape error (softmax over any axis is legal), the loss falls a bit and then stalls
far above what the correct softmax(dim=-1) model reaches.

Source: https://github.com/FudanNLP/fastNLP/issues/254
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, SEQ, D, HEADS, BATCH = 12, 12, 32, 4, 32


class DotAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(D, D)
        self.k = nn.Linear(D, D)
        self.v = nn.Linear(D, D)
        self.o = nn.Linear(D, D)
        self.hd = D // HEADS

    def forward(self, x):
        B, T, _ = x.shape
        split = lambda t: t.view(B, T, HEADS, self.hd).transpose(1, 2)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = q @ k.transpose(-1, -2) / self.hd**0.5  # (B, H, T, T)
        weights = F.softmax(scores, dim=1)  # BUG-LINE
        out = (weights @ v).transpose(1, 2).reshape(B, T, D)
        return self.o(out)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.pos = nn.Parameter(torch.randn(1, SEQ, D) * 0.5)
        self.attn = DotAttention()
        self.norm = nn.LayerNorm(D)
        self.ff = nn.Sequential(nn.Linear(D, 64), nn.ReLU(), nn.Linear(64, VOCAB))

    def forward(self, x):
        h = self.emb(x) + self.pos
        h = self.norm(h + self.attn(h))
        return self.ff(h)


def make_batch(n):
    x = torch.randint(1, VOCAB, (n, SEQ))
    y = torch.zeros_like(x)
    y[:, 1:] = x[:, :-1]
    return x, y


model = Tagger()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for step in range(150):
    x, y = make_batch(BATCH)
    loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 30 == 0:
        print(f"step {step:3d} loss {loss.item():.4f}")
print(f"final loss {loss.item():.4f}")

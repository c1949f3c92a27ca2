"""Activation checkpointing behind a frozen embedding, done with use_reentrant=False.

Source: https://github.com/pytorch/pytorch/issues/124725

In the issue the PyTorch maintainer explains that limitations seen with activation
checkpointing are expected for use_reentrant=True and that the recommended setting is
use_reentrant=False. This program checkpoints every residual MLP block of a small
sequence classifier whose input comes from a frozen (requires_grad=False) embedding
table, which is exactly the case where the input of the first checkpointed segment
does not require grad. With the non-reentrant implementation the parameters inside
the checkpointed blocks still receive gradients. Unusual on purpose: a frozen
embedding, forward recomputation during backward, and only the non-embedding
parameters handed to the optimizer.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, DIM, SEQ = 50, 32, 12


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(DIM)
        self.ff = nn.Sequential(nn.Linear(DIM, 64), nn.GELU(), nn.Linear(64, DIM))

    def forward(self, x):
        return x + self.ff(self.norm(x))


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.emb.weight.requires_grad_(False)
        self.blocks = nn.ModuleList([Block() for _ in range(3)])
        self.head = nn.Linear(DIM, 2)

    def forward(self, tokens):
        h = self.emb(tokens)
        for blk in self.blocks:
            h = checkpoint(blk, h, use_reentrant=False)
        return self.head(h.mean(1))


model = Classifier()
opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=3e-3)
tokens = torch.randint(0, VOCAB, (512, SEQ))
labels = ((tokens < 10).sum(1) > (tokens >= 40).sum(1)).long()

for epoch in range(1, 7):
    for idx in torch.randperm(512).split(64):
        loss = F.cross_entropy(model(tokens[idx]), labels[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    if epoch % 2 == 0:
        g = model.blocks[0].ff[0].weight.grad.norm().item()
        with torch.no_grad():
            acc = (model(tokens).argmax(1) == labels).float().mean()
        print(f"epoch {epoch} loss {loss.item():.4f} acc {acc.item():.3f} block0 grad norm {g:.4f}")

"""Activation checkpointing with use_reentrant=True right after a frozen embedding.

Source: https://hivebook.wiki/wiki/gradient-checkpointing-memory-for-compute-and-the-use-reentrant-trap

The page describes the use_reentrant=True trap: the reentrant implementation only
produces gradients if at least one tensor input of the checkpointed function requires
grad. When the segment's input comes from a frozen embedding, the checkpoint output
does not require grad, so none of the parameters inside that segment receive
gradients (PyTorch only emits a UserWarning, silenced here as many codebases do).
Here each residual block is checkpointed; the first block's input is the frozen
embedding output, its output therefore does not require grad either, and the same
holds for every following block. All block parameters stay at their initial values
and only the linear head trains, so accuracy stalls far below what the model can
reach.
"""

import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

warnings.filterwarnings("ignore")
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
            h = checkpoint(blk, h, use_reentrant=True)  # BUG-LINE
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
        with torch.no_grad():
            acc = (model(tokens).argmax(1) == labels).float().mean()
        print(f"epoch {epoch} loss {loss.item():.4f} acc {acc.item():.3f}")

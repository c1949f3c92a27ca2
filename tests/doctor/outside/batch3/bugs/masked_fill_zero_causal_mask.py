"""A hand-written causal self-attention fills the future positions' scores with 0 instead of -inf before the
softmax: exp(0) = 1, so every position still attends to the tokens after it (with a weight like any other score).
The language model learns to copy the next token and its loss drops fast; generation is garbage.

Source: https://github.com/jadore801120/attention-is-all-you-need-pytorch/issues/16
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
V, T, D = 40, 16, 32


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.register_buffer("future", torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1))

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)  # (B, T, D) each
        scores = q @ k.transpose(1, 2) / math.sqrt(D)  # (B, T, T)
        scores = scores.masked_fill(self.future[: x.shape[1], : x.shape[1]], 0.0)  # BUG-LINE
        return self.proj(F.softmax(scores, dim=-1) @ v)


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(V, D)
        self.pos = nn.Parameter(torch.zeros(T, D))
        self.attn = CausalSelfAttention()
        self.head = nn.Linear(D, V)

    def forward(self, idx):
        h = self.tok(idx) + self.pos[: idx.shape[1]]
        return self.head(h + self.attn(h))  # (B, T, V)


model = TinyLM()
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
seqs = torch.randint(0, V, (128, T + 1))
for i in range(0, 128, 16):
    x, y = seqs[i : i + 16, :-1], seqs[i : i + 16, 1:]
    loss = F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()

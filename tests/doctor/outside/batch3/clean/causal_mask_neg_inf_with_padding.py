"""A hand-written causal self-attention that fills future positions with -inf before the softmax, trained on
right-padded sequences whose padded targets are -100 (ignored by the loss). Correct: the twin of filling the
mask with 0.

Source: https://github.com/hyunwoongko/transformer/issues/10
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
V, T, D, PAD = 40, 16, 32, 0


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(V, D)
        self.pos = nn.Parameter(torch.zeros(T, D))
        self.qkv = nn.Linear(D, 3 * D)
        self.head = nn.Linear(D, V)
        self.register_buffer("future", torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1))

    def forward(self, idx):
        t = idx.shape[1]
        h = self.tok(idx) + self.pos[:t]
        q, k, v = self.qkv(h).chunk(3, dim=-1)  # (B, T, D) each
        scores = (q @ k.transpose(1, 2) / math.sqrt(D)).masked_fill(self.future[:t, :t], float("-inf"))
        return self.head(h + F.softmax(scores, dim=-1) @ v)  # (B, T, V)


model = TinyLM()
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
lengths = torch.randint(6, T + 2, (128,))
seqs = torch.randint(1, V, (128, T + 1))
seqs[torch.arange(T + 1)[None, :] >= lengths[:, None]] = PAD
for i in range(0, 128, 16):
    x, y = seqs[i : i + 16, :-1], seqs[i : i + 16, 1:].clone()
    y[y == PAD] = -100
    loss = F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1), ignore_index=-100)
    opt.zero_grad()
    loss.backward()
    opt.step()

"""Sequence loss counts padding positions because ignore_index is left at -100.

The target sequences are padded with PAD=0, but cross_entropy is called with
the default ignore_index=-100, so every padded position is a real training
target.  The decoder spends most of its capacity predicting padding and the
loss is dominated by trivial tokens.
Source: https://github.com/lukas-blecher/LaTeX-OCR/issues/305
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
PAD, V = 0, 30
model = nn.Sequential(nn.Embedding(V, 32), nn.Linear(32, V))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)

seqs = torch.randint(1, V, (16, 12))
lengths = torch.randint(3, 12, (16,))
for i, n in enumerate(lengths):
    seqs[i, n:] = PAD
xi, xo = seqs[:, :-1], seqs[:, 1:]

for _step in range(8):
    logits = model(xi)
    loss = F.cross_entropy(logits.transpose(1, 2), xo)  # BUG-LINE
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f} pad_fraction {(xo == PAD).float().mean():.2f}")

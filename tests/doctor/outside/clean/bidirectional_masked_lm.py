"""BERT-style: random positions masked, the model sees both sides, targets are the original tokens at the masked places.

Source: https://lynx-cortex.pages.dev/phase-17-mini-gpt/break/00-break-forget-causal-mask/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
V, T, D, MASK = 30, 10, 32, 0
emb, block = nn.Embedding(V, D), nn.TransformerEncoderLayer(D, 4, 64, dropout=0.0, batch_first=True)
out = nn.Linear(D, V)
opt = torch.optim.Adam([*emb.parameters(), *block.parameters(), *out.parameters()], lr=1e-3)
tokens = torch.randint(1, V, (16, T))
for _step in range(3):
    where = torch.rand(16, T) < 0.15
    inputs = tokens.masked_fill(where, MASK)
    labels = tokens.masked_fill(~where, -100)
    opt.zero_grad()
    logits = out(block(emb(inputs)))
    loss = F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1), ignore_index=-100)
    loss.backward()
    opt.step()

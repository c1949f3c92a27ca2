"""Padding mask passed to nn.MultiheadAttention with the opposite polarity.

PyTorch's key_padding_mask marks positions to IGNORE with True, but the mask is
built as (tokens != PAD), i.e. True on real tokens.  Attention therefore only
looks at padding keys and ignores every real token, and nothing errors out.
Source: https://github.com/lucidrains/feedback-transformer-pytorch/issues/6
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
PAD, V, D = 0, 20, 32
emb = nn.Embedding(V, D, padding_idx=PAD)
attn = nn.MultiheadAttention(D, num_heads=4, batch_first=True)
head = nn.Linear(D, 2)
params = list(emb.parameters()) + list(attn.parameters()) + list(head.parameters())
opt = torch.optim.Adam(params, lr=1e-3)

tokens = torch.randint(1, V, (8, 12))
tokens[:, 9:] = PAD
labels = (tokens[:, 0] > V // 2).long()

for _step in range(6):
    h = emb(tokens)
    mask = tokens != PAD  # BUG-LINE
    out, _ = attn(h, h, h, key_padding_mask=mask)
    logits = head(out[:, 0])
    loss = nn.functional.cross_entropy(logits, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")

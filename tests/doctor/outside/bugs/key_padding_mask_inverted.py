"""An attention_mask (1 for real tokens) is passed as key_padding_mask, where True means ignore: real tokens are
masked, padding attended.

Source: https://mlnotes.pages.dev/library/concepts/transformer-training
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
V, T = 20, 8
emb = nn.Embedding(V, 16)
layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
head = nn.Linear(16, 2)
opt = torch.optim.Adam([*emb.parameters(), *layer.parameters(), *head.parameters()], lr=1e-3)
ids = torch.randint(1, V, (8, T))
attention_mask = torch.ones(8, T, dtype=torch.bool)
attention_mask[:, 6:] = False
ids[:, 6:] = 0
y = torch.randint(0, 2, (8,))
for _step in range(3):
    opt.zero_grad()
    h = layer(emb(ids), src_key_padding_mask=attention_mask)  # BUG-LINE
    loss = F.cross_entropy(head(h[:, 0]), y)
    loss.backward()
    opt.step()

"""A sequence tagger pads label sequences with -100 and uses ``cross_entropy(ignore_index=-100)`` with label
smoothing, so padded positions contribute neither loss nor gradient while real positions are smoothed. The
padding token id 0 is distinct from every real tag.

Source: https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
emb = nn.Embedding(40, 32, padding_idx=0)
lstm = nn.LSTM(32, 32, batch_first=True, bidirectional=True)
out = nn.Linear(64, 6)
params = list(emb.parameters()) + list(lstm.parameters()) + list(out.parameters())
opt = torch.optim.Adam(params, lr=3e-3)
for _step in range(5):
    lengths = torch.randint(3, 13, (16,))
    valid = torch.arange(12)[None] < lengths[:, None]
    tok = torch.randint(1, 40, (16, 12)) * valid
    tags = (tok % 6).masked_fill(~valid, -100)
    logits = out(lstm(emb(tok))[0])
    loss = F.cross_entropy(logits.reshape(-1, 6), tags.reshape(-1), ignore_index=-100, label_smoothing=0.1)
    opt.zero_grad()
    loss.backward()
    opt.step()

"""Discriminative fine-tuning: each layer gets its own learning rate in a separate param group, and the
embedding group is given ``lr=0.0`` on purpose for the first phase (gradual unfreezing), while it still sits in
the optimizer so it can be unfrozen later by changing the group's lr.

Source: https://arxiv.org/abs/1801.06146
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
emb = nn.Embedding(60, 32)
rnn = nn.GRU(32, 32, batch_first=True)
head = nn.Linear(32, 3)
opt = torch.optim.Adam(
    [
        {"params": emb.parameters(), "lr": 0.0},
        {"params": rnn.parameters(), "lr": 1e-3},
        {"params": head.parameters(), "lr": 3e-3},
    ]
)
for _step in range(5):
    tok, y = torch.randint(0, 60, (16, 10)), torch.randint(0, 3, (16,))
    h = rnn(emb(tok))[0][:, -1]
    loss = F.cross_entropy(head(h), y)
    opt.zero_grad()
    loss.backward()
    opt.step()

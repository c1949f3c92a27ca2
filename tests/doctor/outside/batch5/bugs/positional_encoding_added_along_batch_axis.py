"""A sequence model written batch-first adds its sinusoidal positional table with ``pe[:x.size(0)]``, a slice
written for (seq, batch, dim) input. With batch-first input the table is indexed by the batch position, so every
token of a sample gets the same vector and the encoder never learns order; the shapes still broadcast.

Source: https://github.com/songyangco/GETNext/issues/2
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
D, T, B = 32, 12, 16
pe = torch.zeros(64, 1, D)
pos = torch.arange(64).unsqueeze(1)
div = torch.exp(torch.arange(0, D, 2) * (-math.log(10000.0) / D))
pe[:, 0, 0::2] = torch.sin(pos * div)
pe[:, 0, 1::2] = torch.cos(pos * div)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, D)
        layer = nn.TransformerEncoderLayer(D, 4, 64, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(D, 20)
        self.register_buffer("pe", pe)

    def forward(self, tok):
        x = self.emb(tok)
        x = x + self.pe[: x.size(0)]  # BUG-LINE
        return self.head(self.enc(x))


model = Model()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _step in range(6):
    tok = torch.randint(0, 20, (B, T))
    target = torch.roll(tok, 1, dims=1)
    loss = F.cross_entropy(model(tok).reshape(-1, 20), target.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()

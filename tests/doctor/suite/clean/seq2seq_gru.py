"""Clean: GRU encoder-decoder learning to reverse digit sequences, teacher forcing, label smoothing."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
V, T, BOS = 12, 8, 11


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 32)
        self.enc = nn.GRU(32, 64, batch_first=True)
        self.dec = nn.GRU(32, 64, batch_first=True)
        self.out = nn.Linear(64, V)

    def forward(self, src, tgt_in):
        _, h = self.enc(self.emb(src))
        y, _ = self.dec(self.emb(tgt_in), h)
        return self.out(y)


model = Seq2Seq()
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
for _step in range(10):
    src = torch.randint(0, 10, (32, T))
    tgt = src.flip(1)
    tgt_in = torch.cat([torch.full((32, 1), BOS), tgt[:, :-1]], 1)
    logits = model(src, tgt_in)  # (B, T, V)
    loss = F.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1), label_smoothing=0.1)
    opt.zero_grad()
    loss.backward()
    opt.step()

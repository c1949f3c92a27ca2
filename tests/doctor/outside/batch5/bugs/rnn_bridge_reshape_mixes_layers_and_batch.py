"""A seq2seq bridge maps the encoder's final states (layers, batch, hidden) to the decoder's initial states
with ``linear(states.view(-1, layers * hidden))``. Since layers is the leading axis, each row mixes states of
different samples, so every decoder is initialised partly from another sentence.

Source: https://github.com/OpenNMT/OpenNMT-py/issues/1521
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
L, H, V = 2, 32, 25


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 16)
        self.enc = nn.GRU(16, H, num_layers=L, batch_first=True)
        self.bridge = nn.Linear(L * H, L * H)
        self.dec = nn.GRU(16, H, num_layers=L, batch_first=True)
        self.out = nn.Linear(H, V)

    def forward(self, src, tgt_in):
        _, states = self.enc(self.emb(src))
        size = states.size()
        bridged = F.relu(self.bridge(states.view(-1, L * H))).view(size)  # BUG-LINE
        h, _ = self.dec(self.emb(tgt_in), bridged.contiguous())
        return self.out(h)


model = Seq2Seq()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for _step in range(5):
    src = torch.randint(1, V, (16, 8))
    tgt = torch.flip(src, dims=[1])
    tgt_in = torch.cat([torch.zeros(16, 1, dtype=torch.long), tgt[:, :-1]], 1)
    loss = F.cross_entropy(model(src, tgt_in).reshape(-1, V), tgt.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()

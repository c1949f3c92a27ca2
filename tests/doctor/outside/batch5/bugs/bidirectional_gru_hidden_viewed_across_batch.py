"""An encoder turns the bidirectional GRU state ``h_n`` of shape (directions, batch, hidden) into a per-sample
vector with ``hidden.view(batch, -1)``. Because batch is not the leading axis, each row mixes the forward state of
two different samples; the latent code of a sample is built partly from its neighbour.

Source: https://github.com/PaccMann/paccmann_chemistry/issues/5
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(30, 16)
        self.gru = nn.GRU(16, 32, batch_first=True, bidirectional=True)
        self.head = nn.Linear(64, 4)

    def forward(self, tok):
        _, hidden = self.gru(self.emb(tok))
        hidden = hidden.view(tok.size(0), -1)  # BUG-LINE
        return self.head(hidden)


model = Encoder()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
tok = torch.randint(0, 30, (96, 10))
y = tok[:, 0] % 4
for i in range(0, 96, 24):
    loss = F.cross_entropy(model(tok[i : i + 24]), y[i : i + 24])
    opt.zero_grad()
    loss.backward()
    opt.step()

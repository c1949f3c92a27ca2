"""A knowledge-graph scorer builds its entity and relation tables with ``padding_idx=0`` although index 0 is a
real entity / relation. nn.Embedding never passes gradient to the padding row, so entity 0 and relation 0 keep
their initial vectors (zeros) forever, and every triple that involves them cannot be learned. No error.

Source: https://github.com/ibalazevic/TuckER/issues/17
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
N_ENT, N_REL, D = 20, 5, 16


class DistMult(nn.Module):
    def __init__(self):
        super().__init__()
        self.E = nn.Embedding(N_ENT, D)
        self.R = nn.Embedding(N_REL, D, padding_idx=0)  # BUG-LINE

    def forward(self, h, r):
        return (self.E(h) * self.R(r)) @ self.E.weight.t()


model = DistMult()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
h = torch.randint(0, N_ENT, (160,))
r = torch.randint(0, N_REL, (160,))
t = torch.randint(0, N_ENT, (160,))
for i in range(0, 160, 32):
    loss = F.cross_entropy(model(h[i : i + 32], r[i : i + 32]), t[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()

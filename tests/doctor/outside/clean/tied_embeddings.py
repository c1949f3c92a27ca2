"""An LM whose output projection shares the embedding matrix; model.parameters() lists it once.

Source: https://github.com/pytorch/pytorch/issues/40967
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
V, D = 40, 16


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.rnn = nn.GRU(D, D, batch_first=True)
        self.out = nn.Linear(D, V, bias=False)
        self.out.weight = self.emb.weight

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.out(h)


model = LM()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
data = torch.randint(0, V, (8, 11))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(data[:, :-1]).reshape(-1, V), data[:, 1:].reshape(-1))
    loss.backward()
    opt.step()

"""A small LSTM language model ties its output projection to the input embedding (``decoder.weight =
encoder.weight``). One parameter is used twice and receives gradient from both uses; the optimizer sees it once
because ``parameters()`` de-duplicates shared parameters.

Source: https://arxiv.org/abs/1611.01462
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
V, D = 50, 32


class TiedLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Embedding(V, D)
        self.rnn = nn.LSTM(D, D, batch_first=True)
        self.decoder = nn.Linear(D, V)
        self.decoder.weight = self.encoder.weight

    def forward(self, tok):
        return self.decoder(self.rnn(self.encoder(tok))[0])


model = TiedLM()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for _step in range(5):
    tok = torch.randint(0, V, (16, 21))
    loss = F.cross_entropy(model(tok[:, :-1]).reshape(-1, V), tok[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()

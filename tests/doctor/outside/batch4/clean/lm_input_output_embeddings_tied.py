"""Weight tying in a small language model: the output projection reuses the input embedding matrix
(decoder.weight = encoder.weight), so one Parameter is used twice and receives the sum of both gradients. The
shared tensor appearing once in model.parameters() is intended.

Source: https://arxiv.org/abs/1608.05859
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class TiedLM(nn.Module):
    def __init__(self, vocab=60, d=32):
        super().__init__()
        self.encoder = nn.Embedding(vocab, d)
        self.rnn = nn.GRU(d, d, batch_first=True)
        self.decoder = nn.Linear(d, vocab)
        self.decoder.weight = self.encoder.weight

    def forward(self, x):
        h, _ = self.rnn(self.encoder(x))
        return self.decoder(h)


model = TiedLM()
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
data = torch.randint(0, 60, (64, 13))
for i in range(0, 64, 16):
    x, y = data[i : i + 16, :-1], data[i : i + 16, 1:]
    loss = F.cross_entropy(model(x).reshape(-1, 60), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()

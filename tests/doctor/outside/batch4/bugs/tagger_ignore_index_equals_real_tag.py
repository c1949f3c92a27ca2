"""A sequence tagger passes ``ignore_index=pad_index`` (0) to the cross-entropy, but tag 0 is also a real tag
("O"). Every token whose gold tag is 0 is silently dropped from the loss, so the most frequent class is never
trained and the model is pushed to predict the other tags everywhere.

Source: https://github.com/nyu-mll/jiant/issues/925
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
PAD_INDEX = 0
N_TAGS = 5


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(60, 32)
        self.lstm = nn.LSTM(32, 32, batch_first=True)
        self.out = nn.Linear(32, N_TAGS)

    def forward(self, tok):
        h, _ = self.lstm(self.emb(tok))
        return self.out(h)


tokens = torch.randint(1, 60, (96, 12))
tags = torch.where(torch.rand(96, 12) < 0.6, torch.zeros(96, 12, dtype=torch.long), torch.randint(1, N_TAGS, (96, 12)))
model = Tagger()
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
for i in range(0, 96, 24):
    logits = model(tokens[i : i + 24])
    loss = F.cross_entropy(logits.reshape(-1, N_TAGS), tags[i : i + 24].reshape(-1), ignore_index=PAD_INDEX)  # BUG-LINE
    opt.zero_grad()
    loss.backward()
    opt.step()

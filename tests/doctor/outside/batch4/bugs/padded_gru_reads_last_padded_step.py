"""A text classifier runs a GRU over right-padded batches of variable length and takes ``out[:, -1]`` as the
sentence representation. For every sequence shorter than the batch maximum that position is a padding step,
so the classifier mostly sees the state after reading pad tokens instead of the last real token. Training runs
without complaint and the real tokens' signal is washed out.

Source: https://github.com/keitakurita/practical-torchtext/issues/5
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
PAD = 0


class GRUClassifier(nn.Module):
    def __init__(self, vocab=40, d=24, classes=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d, padding_idx=PAD)
        self.gru = nn.GRU(d, d, batch_first=True)
        self.head = nn.Linear(d, classes)

    def forward(self, tokens, lengths):
        out, _ = self.gru(self.emb(tokens))
        last = out[:, -1]  # BUG-LINE
        return self.head(last)


lengths = torch.randint(3, 16, (128,))
tokens = torch.randint(1, 40, (128, 16))
tokens[torch.arange(16)[None, :] >= lengths[:, None]] = PAD
labels = (tokens[torch.arange(128), lengths - 1] > 20).long()

model = GRUClassifier()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for i in range(0, 128, 32):
    loss = F.cross_entropy(model(tokens[i : i + 32], lengths[i : i + 32]), labels[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()

"""Truncated backpropagation through time: a long sequence is processed in chunks and the LSTM state is carried
over between chunks but detached ("repackaged") at each boundary, so gradients stop at the chunk edge on purpose
and the graph does not grow across steps.

Source: https://github.com/pytorch/examples/blob/main/word_language_model/main.py
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
emb = nn.Embedding(30, 16)
lstm = nn.LSTM(16, 32, batch_first=True)
out = nn.Linear(32, 30)
params = [*emb.parameters(), *lstm.parameters(), *out.parameters()]
opt = torch.optim.Adam(params, lr=2e-3)
stream = torch.randint(0, 30, (4, 101))
hidden = None
for t in range(0, 100, 20):
    x, y = stream[:, t : t + 20], stream[:, t + 1 : t + 21]
    if hidden is not None:
        hidden = tuple(h.detach() for h in hidden)
    h, hidden = lstm(emb(x), hidden)
    loss = F.cross_entropy(out(h).reshape(-1, 30), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()

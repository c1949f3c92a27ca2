"""An LSTM LM trained with targets equal to its inputs: it learns to copy, not to predict.

Source: https://karpathy.github.io/2019/04/25/recipe/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
V = 30
emb, rnn, out = nn.Embedding(V, 16), nn.LSTM(16, 32, batch_first=True), nn.Linear(32, V)
params = [*emb.parameters(), *rnn.parameters(), *out.parameters()]
opt = torch.optim.Adam(params, lr=1e-3)
tokens = torch.randint(0, V, (8, 12))
for _step in range(3):
    opt.zero_grad()
    h, _ = rnn(emb(tokens))
    logits = out(h)
    loss = F.cross_entropy(logits.reshape(-1, V), tokens.reshape(-1))  # BUG-LINE
    loss.backward()
    opt.step()

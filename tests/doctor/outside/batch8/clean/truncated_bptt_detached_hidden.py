"""Truncated backpropagation through time: the LSTM state is carried across chunks but detached.

A long sequence is processed in chunks; the final (h, c) of one chunk
initialises the next, and is detached so that backward stops at the chunk
boundary.  Gradients not flowing into earlier chunks are intended.
Source: https://github.com/dpressel/dliss-tutorial/issues/1
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
V, H, CHUNK = 40, 32, 10
emb, lstm, out = nn.Embedding(V, 16), nn.LSTM(16, H, batch_first=True), nn.Linear(H, V)
params = list(emb.parameters()) + list(lstm.parameters()) + list(out.parameters())
opt = torch.optim.Adam(params, lr=3e-3)
stream = torch.randint(0, V, (4, 8 * CHUNK + 1))

hidden = None
for step in range(8):
    s = step * CHUNK
    inp, tgt = stream[:, s : s + CHUNK], stream[:, s + 1 : s + CHUNK + 1]
    if hidden is not None:
        hidden = tuple(h.detach() for h in hidden)
    y, hidden = lstm(emb(inp), hidden)
    loss = nn.functional.cross_entropy(out(y).reshape(-1, V), tgt.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")

"""Language-model style training with truncated backpropagation through time: a
long stream is cut into chunks of 10 steps, and the LSTM hidden state is carried
across chunks but detached at each chunk boundary. The state keeps its value
(long context in the forward pass) while gradients stop at the chunk edge, which
is the intended truncation.

Source: https://arxiv.org/abs/1409.2329
"""

import torch
from torch import nn

torch.manual_seed(0)
vocab = 30
emb = nn.Embedding(vocab, 16)
lstm = nn.LSTM(16, 32, batch_first=True)
head = nn.Linear(32, vocab)
params = list(emb.parameters()) + list(lstm.parameters()) + list(head.parameters())
opt = torch.optim.Adam(params, lr=3e-3)
stream = (torch.arange(4 * 61) % vocab).view(4, 61)
hidden = None
for start in range(0, 60, 10):
    inp = stream[:, start : start + 10]
    tgt = stream[:, start + 1 : start + 11]
    if hidden is not None:
        hidden = tuple(h.detach() for h in hidden)
    out, hidden = lstm(emb(inp), hidden)
    loss = nn.functional.cross_entropy(head(out).reshape(-1, vocab), tgt.reshape(-1))
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
print("loss", loss.item())

"""The autoregressive text loss is computed with F.cross_entropy over all positions
although the sequences are right-padded with pad id 0. An ignore_index is defined
but not passed to the loss, so padding positions dominate the objective: the
model mostly learns to predict padding and short sequences get less weight.

Source: https://github.com/lucidrains/DALLE-pytorch/issues/57
"""

import torch
from torch import nn
from torch.nn import functional as F

PAD = 0
torch.manual_seed(0)
vocab = 40
emb = nn.Embedding(vocab, 32)
rnn = nn.GRU(32, 32, batch_first=True)
out = nn.Linear(32, vocab)
params = list(emb.parameters()) + list(rnn.parameters()) + list(out.parameters())
opt = torch.optim.Adam(params, lr=1e-2)
seqs = torch.full((16, 20), PAD)
for i in range(16):
    n = 4 + i % 6
    seqs[i, :n] = torch.randint(1, vocab, (n,))
ignore_index = PAD
for _step in range(6):
    inp, tgt = seqs[:, :-1], seqs[:, 1:]
    h, _ = rnn(emb(inp))
    logits = out(h)
    loss = F.cross_entropy(logits.reshape(-1, vocab), tgt.reshape(-1))  # BUG-LINE
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())

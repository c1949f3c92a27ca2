"""Label-smoothed token cross-entropy where padding positions are removed before the loss.

Unusual: label_smoothing is combined with padded sequences; to keep the uniform smoothing term
from counting padded tokens, the logits/targets are filtered with the padding mask first
instead of relying on ignore_index.
Source: https://github.com/pytorch/pytorch/issues/73205
"""

import torch

torch.manual_seed(0)
V, PAD = 20, 0
emb = torch.nn.Embedding(V, 32)
rnn = torch.nn.GRU(32, 32, batch_first=True)
out = torch.nn.Linear(32, V)
params = list(emb.parameters()) + list(rnn.parameters()) + list(out.parameters())
opt = torch.optim.Adam(params, lr=1e-2)
loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
for _step in range(8):
    lens = torch.randint(4, 10, (6,))
    x = torch.randint(1, V, (6, 10))
    mask = torch.arange(10)[None] < lens[:, None]
    x = x.masked_fill(~mask, PAD)
    h, _ = rnn(emb(x[:, :-1]))
    logits = out(h)
    tgt = x[:, 1:]
    keep = mask[:, 1:]
    loss = loss_fn(logits[keep], tgt[keep])
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")

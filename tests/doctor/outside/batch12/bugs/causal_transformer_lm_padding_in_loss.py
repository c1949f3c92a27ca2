"""Trains a small causal Transformer language model (written with torch.nn.TransformerEncoder and
a causal mask) on variable-length synthetic "sentences" that are right-padded to a common length
with a PAD token id. Next-token labels are the shifted input ids, padding included, and the
cross-entropy is built with its default ignore_index (-100), which never matches the PAD id. Every
padded position is therefore a training target: most of the loss (and of the gradient the
optimiser normalises) comes from the trivial "PAD follows PAD" prediction, the logged loss looks
far better than the model really is, and learning on the real tokens is slowed. No error or
warning is produced.

Source: https://github.com/FlagAI-Open/FlagAI/issues/522
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)

PAD, BOS, EOS = 0, 1, 2
VOCAB, MAXLEN, D = 24, 20, 64


def make_batch(n):
    seqs = torch.full((n, MAXLEN), PAD, dtype=torch.long)
    for i in range(n):
        length = int(torch.randint(4, 11, (1,)))
        start = int(torch.randint(0, 20, (1,)))
        stride = int(torch.randint(1, 4, (1,)))
        body = [(start + k * stride) % 20 + 3 for k in range(length)]
        row = [BOS] + body + [EOS]
        seqs[i, : len(row)] = torch.tensor(row)
    return seqs


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D)
        self.pos = nn.Embedding(MAXLEN, D)
        layer = nn.TransformerEncoderLayer(D, 4, 128, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(D, VOCAB)

    def forward(self, ids):
        t = ids.size(1)
        h = self.tok(ids) + self.pos(torch.arange(t))
        mask = nn.Transformer.generate_square_subsequent_mask(t)
        return self.head(self.enc(h, mask=mask, is_causal=True))


def real_token_loss(model, seqs):
    with torch.no_grad():
        logits = model(seqs[:, :-1])
        labels = seqs[:, 1:].clone()
        labels[labels == PAD] = -100
        return F.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1)).item()


model = TinyLM()
criterion = nn.CrossEntropyLoss()  # BUG-LINE
opt = torch.optim.Adam(model.parameters(), lr=1e-3)

for step in range(70):
    seqs = make_batch(32)
    logits = model(seqs[:, :-1])
    labels = seqs[:, 1:]
    loss = criterion(logits.reshape(-1, VOCAB), labels.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step} train loss {loss.item():.4f}")

torch.manual_seed(99)
print(f"held-out loss on real (non-pad) targets: {real_token_loss(model, make_batch(256)):.4f}")

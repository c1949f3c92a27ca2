"""Trains a small Transformer encoder (torch.nn.TransformerEncoder, batch_first) sentence
classifier that reads its prediction from a [CLS] token, on synthetic right-padded token
sequences whose label is whether token A occurs before token B. The key-padding mask is built as
`tokens != PAD`, i.e. True for real tokens, but PyTorch's `src_key_padding_mask` marks with True
the positions to IGNORE. Attention is therefore allowed only onto padding keys: the [CLS] token
never sees the sentence content, so the classifier stays at chance. Every sentence has at least
one padding position, so no row is fully masked, no NaN appears, and nothing raises or warns.

Source: https://github.com/mlwithme/TransformerTranslation/issues/6
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)

PAD, CLS, A, B = 0, 1, 2, 3
VOCAB, MAXLEN, D = 20, 16, 64


def make_batch(n):
    toks = torch.full((n, MAXLEN), PAD, dtype=torch.long)
    labels = torch.randint(0, 2, (n,))
    for i in range(n):
        length = int(torch.randint(5, MAXLEN - 1, (1,)))  # leaves >= 1 pad
        body = torch.randint(4, VOCAB, (length,))
        pa, pb = sorted(torch.randperm(length)[:2].tolist())
        if labels[i] == 1:
            body[pa], body[pb] = A, B
        else:
            body[pa], body[pb] = B, A
        toks[i, 0] = CLS
        toks[i, 1 : 1 + length] = body
    return toks, labels


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D)
        self.pos = nn.Embedding(MAXLEN, D)
        layer = nn.TransformerEncoderLayer(D, 4, 128, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(D, 2)

    def forward(self, toks):
        h = self.tok(toks) + self.pos(torch.arange(toks.size(1)))
        pad_mask = toks != PAD  # BUG-LINE
        h = self.enc(h, src_key_padding_mask=pad_mask)
        return self.head(h[:, 0])


model = Classifier()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(100):
    toks, labels = make_batch(32)
    loss = F.cross_entropy(model(toks), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0:
        print(f"step {step} loss {loss.item():.4f}")

with torch.no_grad():
    toks, labels = make_batch(400)
    acc = (model(toks).argmax(1) == labels).float().mean().item()
print(f"final accuracy {acc:.3f}")

"""Sentence classification with a small Transformer encoder trained with R-Drop: every batch is
passed through the model twice *in training mode*, so the two passes see different dropout
masks; the loss is the mean cross-entropy of both passes plus alpha times the symmetric KL
divergence between their predictive distributions. Running the same input twice, keeping
dropout active on purpose and using a KL between two outputs of the same network are all part
of the method, not mistakes.

Source: https://arxiv.org/abs/2106.14448
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)

PAD, CLS = 0, 1
VOCAB, MAXLEN, D, ALPHA = 30, 14, 48, 1.0


def make_batch(n):
    toks = torch.randint(3, VOCAB, (n, MAXLEN))
    toks[:, 0] = CLS
    y = (toks[:, 1:] < 10).sum(1).gt(3).long()  # "many low-id words" topic
    return toks, y


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D)
        self.pos = nn.Embedding(MAXLEN, D)
        layer = nn.TransformerEncoderLayer(D, 4, 96, dropout=0.2, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.drop = nn.Dropout(0.2)
        self.head = nn.Linear(D, 2)

    def forward(self, toks):
        h = self.tok(toks) + self.pos(torch.arange(toks.size(1)))
        return self.head(self.drop(self.enc(h)[:, 0]))


model = Encoder()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(45):
    toks, y = make_batch(32)
    logits1, logits2 = model(toks), model(toks)
    ce = 0.5 * (F.cross_entropy(logits1, y) + F.cross_entropy(logits2, y))
    lp1, lp2 = F.log_softmax(logits1, -1), F.log_softmax(logits2, -1)
    kl = 0.5 * (
        F.kl_div(lp1, lp2, log_target=True, reduction="batchmean")
        + F.kl_div(lp2, lp1, log_target=True, reduction="batchmean")
    )
    loss = ce + ALPHA * kl
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 15 == 0:
        print(f"step {step} ce {ce.item():.4f} kl {kl.item():.4f}")

model.eval()
with torch.no_grad():
    toks, y = make_batch(400)
    print(f"final accuracy {(model(toks).argmax(1) == y).float().mean().item():.3f}")

"""Train a small Transformer encoder sentence classifier (synthetic token sequences, label = whether
token 7 occurs more often than token 9) with AdamW and the usual two parameter groups: weight decay
for weight matrices, none for biases and LayerNorm parameters. The exclusion list uses the BERT
naming "LayerNorm.weight", but in this model (as in nn.TransformerEncoderLayer) the norms are called
norm1/norm2/final_norm, so no LayerNorm gain matches and they are all decayed towards zero with a
large coefficient. Nothing errors; the LayerNorm gains are silently shrunk at every step.

Source: https://github.com/deepspeedai/DeepSpeedExamples/pull/755
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
V, L = 32, 24


def make_batch(n):
    x = torch.randint(1, V, (n, L))
    y = ((x == 7).sum(1) > (x == 9).sum(1)).long()
    return x, y


class Classifier(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.emb = nn.Embedding(V, d)
        self.pos = nn.Parameter(torch.zeros(1, L, d))
        layer = nn.TransformerEncoderLayer(d, 4, 128, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.final_norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, 2)

    def forward(self, x):
        h = self.encoder(self.emb(x) + self.pos)
        return self.head(self.final_norm(h.mean(1)))


model = Classifier()
no_decay = ["bias", "LayerNorm.weight"]  # BUG-LINE
groups = [
    {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)], "weight_decay": 0.5},
    {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
]
opt = torch.optim.AdamW(groups, lr=3e-3)
for step in range(40):
    x, y = make_batch(64)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
ln_gain = torch.stack([m.weight.mean() for m in model.modules() if isinstance(m, nn.LayerNorm)]).mean()
x, y = make_batch(512)
with torch.no_grad():
    acc = (model(x).argmax(1) == y).float().mean()
print("final loss", round(loss.item(), 4), "acc", round(acc.item(), 3), "mean LayerNorm gain", round(ln_gain.item(), 4))

"""Clean: tiny causal transformer on characters, dropout, warm-up schedule stepped per step, eval with no_grad."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
text = "the quick brown fox jumps over the lazy dog. " * 60
chars = sorted(set(text))
data = torch.tensor([chars.index(c) for c in text])
V, T, D = len(chars), 32, 64


class TinyGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(V, D)
        self.pos = nn.Embedding(T, D)
        layer = nn.TransformerEncoderLayer(D, 4, 4 * D, dropout=0.1, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(D, V)

    def forward(self, idx):
        mask = nn.Transformer.generate_square_subsequent_mask(idx.shape[1])
        h = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        return self.head(self.blocks(h, mask=mask, is_causal=True))


def batch(n=16):
    s = torch.randint(0, len(data) - T - 1, (n,))
    return torch.stack([data[i : i + T] for i in s]), torch.stack([data[i + 1 : i + T + 1] for i in s])


model = TinyGPT()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10))
for step in range(6):
    x, y = batch()
    loss = F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    sched.step()
    if step % 3 == 0:
        model.eval()
        with torch.no_grad():
            xv, yv = batch(8)
            val = F.cross_entropy(model(xv).reshape(-1, V), yv.reshape(-1))
        model.train()

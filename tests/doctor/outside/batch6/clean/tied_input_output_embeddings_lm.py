"""A nanoGPT-style language model ties the token embedding and the output projection
(``lm_head.weight = wte.weight``): one Parameter appears in two modules, receives gradient from both uses, and
is listed once in ``model.parameters()`` so the optimizer updates it once per step. The sharing is intended.

Source: https://github.com/karpathy/nanoGPT/blob/master/model.py
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class TinyLM(nn.Module):
    def __init__(self, vocab=64, d=32, T=16):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(T, d)
        layer = nn.TransformerEncoderLayer(d, 2, 64, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2)
        self.ln = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(T))

    def forward(self, idx):
        T = idx.size(1)
        h = self.wte(idx) + self.wpe(torch.arange(T))
        h = self.blocks(h, mask=self.mask[:T, :T], is_causal=True)
        return self.lm_head(self.ln(h))


model = TinyLM()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
data = torch.randint(0, 64, (32, 17))
for i in range(0, 32, 8):
    x, y = data[i : i + 8, :-1], data[i : i + 8, 1:]
    loss = F.cross_entropy(model(x).reshape(-1, 64), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()

"""A decoder-only (causally masked) transformer is fine-tuned for classification on the hidden state of the
*first* token, as one would with BERT's [CLS]. Under the causal mask the first position only sees itself, so the
classifier is trained on a representation of one token and cannot use the rest of the sequence.

Source: https://github.com/rasbt/MachineLearning-QandAI-book/issues/18
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
D, T = 32, 12


class CausalClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(30, D)
        self.pos = nn.Parameter(torch.randn(1, T, D) * 0.02)
        self.blocks = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, 4, 64, 0.0, batch_first=True), 2)
        self.head = nn.Linear(D, 2)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(T))

    def forward(self, tok):
        h = self.blocks(self.emb(tok) + self.pos, mask=self.mask, is_causal=True)
        return self.head(h[:, 0])  # BUG-LINE


model = CausalClassifier()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
tok = torch.randint(0, 30, (64, T))
y = (tok[:, -3:] == 3).any(1).long()
for i in range(0, 64, 16):
    loss = F.cross_entropy(model(tok[i : i + 16]), y[i : i + 16])
    opt.zero_grad()
    loss.backward()
    opt.step()

"""A next-token transformer LM with a proper causal mask.

Source: https://lynx-cortex.pages.dev/phase-17-mini-gpt/break/00-break-forget-causal-mask/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
V, T, D = 32, 12, 32


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.pos = nn.Parameter(torch.zeros(T, D))
        self.block = nn.TransformerEncoderLayer(D, 4, 64, dropout=0.0, batch_first=True)
        self.out = nn.Linear(D, V)

    def forward(self, x):
        n = x.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(n)
        h = self.block(self.emb(x) + self.pos[:n], src_mask=mask, is_causal=True)
        return self.out(h)


model = TinyLM()
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
data = torch.randint(0, V, (16, T + 1))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(data[:, :-1]).reshape(-1, V), data[:, 1:].reshape(-1))
    loss.backward()
    opt.step()

"""The boolean mask is tril instead of triu: True masks out, so each position sees only itself and the future.

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
        mask = torch.tril(torch.ones(n, n, dtype=torch.bool), diagonal=-1)  # BUG-LINE
        h = self.emb(x) + self.pos[:n]
        h = self.block(h, src_mask=mask)
        return self.out(h)


model = TinyLM()
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
data = torch.randint(0, V, (16, T + 1))
x, y = data[:, :-1], data[:, 1:]
for _step in range(3):
    opt.zero_grad()
    logits = model(x)
    loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
    loss.backward()
    opt.step()

"""ALBERT-style cross-layer parameter sharing: one transformer layer is applied six times in the forward pass,
so the same weights are used at every depth and their gradient is the sum over all applications. The reuse is
the architecture, not an accident.

Source: https://arxiv.org/abs/1909.11942
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class TinyAlbert(nn.Module):
    def __init__(self, depth=6):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.proj = nn.Linear(16, 32)
        self.shared = nn.TransformerEncoderLayer(32, 4, 64, 0.0, batch_first=True)
        self.depth = depth
        self.head = nn.Linear(32, 2)

    def forward(self, tok):
        h = self.proj(self.emb(tok))
        for _ in range(self.depth):
            h = self.shared(h)
        return self.head(h.mean(1))


model = TinyAlbert()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for _step in range(5):
    tok = torch.randint(0, 50, (16, 10))
    y = (tok == 3).any(1).long()
    loss = F.cross_entropy(model(tok), y)
    opt.zero_grad()
    loss.backward()
    opt.step()

"""A set-transformer style block feeds (batch, tokens, dim) tensors to nn.MultiheadAttention built with the
default batch_first=False, so the module treats the batch axis as the sequence: every sample attends over the
other samples at the same token position instead of over its own tokens. Shapes line up, training runs, and
the model mixes information across the batch.

Source: https://github.com/aipixel/AEMatter/issues/3
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class TokenClassifier(nn.Module):
    def __init__(self, dim=32, classes=4):
        super().__init__()
        self.embed = nn.Linear(8, dim)
        self.attn = nn.MultiheadAttention(dim, num_heads=4)  # BUG-LINE
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):  # x: (batch, tokens, 8)
        h = self.embed(x)
        a, _ = self.attn(h, h, h)
        h = self.norm(h + a)
        return self.head(h.mean(dim=1))


model = TokenClassifier()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X, y = torch.randn(96, 10, 8), torch.randint(0, 4, (96,))
for i in range(0, 96, 16):
    loss = F.cross_entropy(model(X[i : i + 16]), y[i : i + 16])
    opt.zero_grad()
    loss.backward()
    opt.step()

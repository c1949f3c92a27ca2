"""The optimizer is built from two groups, "decay" and "no decay". The decay group correctly skips names that
*contain* "bias" or "norm", but the no-decay group tests ``n in no_decay`` (exact equality with the short
keywords), which matches no full parameter name. Biases and LayerNorm parameters fall into neither group, are
never handed to the optimizer, and keep their initial values while everything runs.

Source: https://github.com/namisan/mt-dnn/pull/37
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        return self.norm(x + F.gelu(self.fc(x)))


model = nn.Sequential(nn.Linear(10, 32), Block(), Block(), nn.Linear(32, 3))
no_decay = ["bias", "norm"]
named = list(model.named_parameters())
groups = [
    {"params": [p for n, p in named if not any(nd in n for nd in no_decay)], "weight_decay": 0.01},
    {"params": [p for n, p in named if n in no_decay], "weight_decay": 0.0},  # BUG-LINE
]
opt = torch.optim.AdamW(groups, lr=1e-3)
X, y = torch.randn(128, 10), torch.randint(0, 3, (128,))
for i in range(0, 128, 32):
    loss = F.cross_entropy(model(X[i : i + 32]), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()

"""Universal-Transformer style depth recurrence: a single encoder layer is applied six times in a loop, with a
learned per-step embedding added before each application. The same parameters are used repeatedly and
accumulate gradient from every application; that weight sharing across depth is the design.

Source: https://arxiv.org/abs/1807.03819
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class UniversalEncoder(nn.Module):
    def __init__(self, d=32, steps=6):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d, 4, 64, dropout=0.0, batch_first=True)
        self.step_emb = nn.Parameter(torch.zeros(steps, d))
        self.steps = steps
        self.inp, self.out = nn.Linear(8, d), nn.Linear(d, 2)

    def forward(self, x):
        h = self.inp(x)
        for t in range(self.steps):
            h = self.layer(h + self.step_emb[t])
        return self.out(h.mean(1))


model = UniversalEncoder()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X = torch.randn(64, 10, 8)
y = (X[:, :, 0].sum(1) > 0).long()
for i in range(0, 64, 16):
    loss = F.cross_entropy(model(X[i : i + 16]), y[i : i + 16])
    opt.zero_grad()
    loss.backward()
    opt.step()

"""A CLIP-like model: forward returns the similarity matrix of the batch (each row depends on every sample, by design).

Source: https://arxiv.org/abs/1910.11015
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Clip(nn.Module):
    def __init__(self):
        super().__init__()
        self.img, self.txt = nn.Linear(12, 16), nn.Linear(8, 16)
        self.logit_scale = nn.Parameter(torch.tensor(2.0))

    def forward(self, a, b):
        za, zb = F.normalize(self.img(a), dim=-1), F.normalize(self.txt(b), dim=-1)
        return self.logit_scale.exp() * za @ zb.t()


model = Clip()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
a, b = torch.randn(16, 12), torch.randn(16, 8)
target = torch.arange(16)
for _step in range(3):
    opt.zero_grad()
    logits = model(a, b)
    loss = (F.cross_entropy(logits, target) + F.cross_entropy(logits.t(), target)) / 2
    loss.backward()
    opt.step()

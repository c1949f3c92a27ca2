"""The model builds ``nn.Embedding(..., padding_idx=0)`` and then re-initialises the whole table with
``weight.data.normal_``. The padding row is no longer zero, and because padding_idx rows never get a gradient it
stays a fixed random vector that is summed into every padded sequence's bag-of-words representation.

Source: https://github.com/pytorch/pytorch/issues/6495
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class BagModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16, padding_idx=0)
        self.emb.weight.data.normal_(0, 1.0)  # BUG-LINE
        self.fc = nn.Linear(16, 2)

    def forward(self, tok):
        return self.fc(self.emb(tok).sum(1))


model = BagModel()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
tok = torch.randint(1, 50, (64, 12))
lengths = torch.randint(3, 13, (64,))
tok[torch.arange(12)[None, :] >= lengths[:, None]] = 0
y = (tok == 7).any(1).long()
for i in range(0, 64, 16):
    loss = F.cross_entropy(model(tok[i : i + 16]), y[i : i + 16])
    opt.zero_grad()
    loss.backward()
    opt.step()

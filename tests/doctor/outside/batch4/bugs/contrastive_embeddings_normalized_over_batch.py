"""A contrastive audio encoder L2-normalises its (batch, dim) embeddings with ``F.normalize(z, dim=0)``, i.e.
down the batch axis, so each feature column is scaled by statistics of the whole batch rather than each
embedding being put on the unit sphere. The similarity logits of one sample then depend on the other samples,
and the loss trains the wrong geometry without any error.

Source: https://github.com/alireza-nasiri/SoundCLR/issues/4
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 16))

    def forward(self, x):
        z = self.net(x)
        return F.normalize(z, dim=0)  # BUG-LINE


enc = Encoder()
opt = torch.optim.Adam(enc.parameters(), lr=1e-3)
X = torch.randn(128, 20)
for i in range(0, 128, 32):
    xb = X[i : i + 32]
    z1 = enc(xb + 0.1 * torch.randn_like(xb))
    z2 = enc(xb + 0.1 * torch.randn_like(xb))
    logits = z1 @ z2.t() / 0.1
    loss = F.cross_entropy(logits, torch.arange(len(xb)))
    opt.zero_grad()
    loss.backward()
    opt.step()

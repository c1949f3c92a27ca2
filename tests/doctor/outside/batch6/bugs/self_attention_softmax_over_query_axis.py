"""A UNet self-attention block computes scores with einsum 'bihd,bjhd->bijh' and normalises with
``softmax(dim=1)``, i.e. over the query index i instead of the key index j. Each output is then a weighted sum
of values whose weights do not sum to one over keys; the block still trains and the loss falls, silently.

Source: https://github.com/labmlai/annotated_deep_learning_paper_implementations/issues/146
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class AttentionBlock(nn.Module):
    def __init__(self, ch, heads=2):
        super().__init__()
        self.heads, self.d = heads, ch // heads
        self.qkv = nn.Linear(ch, 3 * ch)
        self.out = nn.Linear(ch, ch)

    def forward(self, x):
        b, c, h, w = x.shape
        t = x.view(b, c, h * w).permute(0, 2, 1)
        q, k, v = self.qkv(t).view(b, -1, self.heads, 3 * self.d).chunk(3, dim=-1)
        attn = torch.einsum("bihd,bjhd->bijh", q, k) * self.d**-0.5
        attn = attn.softmax(dim=1)  # BUG-LINE
        res = torch.einsum("bijh,bjhd->bihd", attn, v).reshape(b, -1, c)
        return x + self.out(res).permute(0, 2, 1).view(b, c, h, w)


model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), AttentionBlock(8), nn.Conv2d(8, 1, 3, padding=1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x0 = torch.randn(32, 1, 8, 8)
for i in range(0, 32, 8):
    noise = torch.randn_like(x0[i : i + 8])
    loss = F.mse_loss(model(x0[i : i + 8] + noise), noise)
    opt.zero_grad()
    loss.backward()
    opt.step()

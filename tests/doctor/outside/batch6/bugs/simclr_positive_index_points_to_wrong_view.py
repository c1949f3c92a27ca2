"""SimCLR concatenates the two views as [v1_0..v1_{N-1}, v2_0..v2_{N-1}] but builds the positive index as
``arange(2N) // 2 * 2`` (the interleaved layout): after removing the diagonal, the "positive" column for most
rows is an unrelated image, so the contrastive loss pulls random pairs together. It trains without error.

Source: https://github.com/open-mmlab/mmselfsup/issues/159
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 16))
opt = torch.optim.Adam(encoder.parameters(), lr=1e-3)
data = torch.randn(256, 32)
N, tau = 32, 0.2
for i in range(0, 256, N):
    x = data[i : i + N]
    v1, v2 = x + 0.1 * torch.randn_like(x), x + 0.1 * torch.randn_like(x)
    z = F.normalize(encoder(torch.cat([v1, v2])), dim=1)
    sim = z @ z.t() / tau
    mask = ~torch.eye(2 * N, dtype=torch.bool)
    logits = sim[mask].view(2 * N, 2 * N - 1)
    pos = torch.arange(2 * N) // 2 * 2  # BUG-LINE
    pos = torch.where(pos > torch.arange(2 * N), pos - 1, pos)
    loss = F.cross_entropy(logits, pos)
    opt.zero_grad()
    loss.backward()
    opt.step()

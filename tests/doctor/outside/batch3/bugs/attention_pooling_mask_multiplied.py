"""Multiple-instance attention pooling over padded bags masks the padding by multiplying the attention scores by
the mask: a masked score becomes 0, not -inf, so after the softmax every padded instance still gets weight
exp(0) / Z and the pooled feature of a short bag is diluted by padding. The model trains; short bags are
systematically wrong.

Source: https://github.com/georg-wolflein/good-features/pull/1
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class AttentionMIL(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(20, 32), nn.ReLU())
        self.score = nn.Linear(32, 1)
        self.head = nn.Linear(32, 2)

    def forward(self, bags, mask):
        h = self.embed(bags)  # (B, N, 32)
        scores = self.score(h).squeeze(-1)  # (B, N)
        scores = scores * mask  # BUG-LINE
        weights = F.softmax(scores, dim=1)  # (B, N)
        return self.head((weights.unsqueeze(-1) * h).sum(1))


lengths = torch.randint(2, 12, (128,))
mask = (torch.arange(12)[None, :] < lengths[:, None]).float()  # (B, 12): 1 = real instance
bags = torch.randn(128, 12, 20) * mask.unsqueeze(-1)  # padding instances are zero vectors
labels = (bags[:, :, 0].sum(1) > 0).long()
model = AttentionMIL()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for i in range(0, 128, 16):
    loss = F.cross_entropy(model(bags[i : i + 16], mask[i : i + 16]), labels[i : i + 16])
    opt.zero_grad()
    loss.backward()
    opt.step()

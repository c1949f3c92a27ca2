"""A pretrained backbone checkpoint whose keys carry a wrapper prefix ("model.")
is loaded with load_state_dict(strict=False). None of the keys match, so nothing
is loaded and no error is raised: fine-tuning silently starts from random weights
instead of the pretrained ones.

Source: https://github.com/pytorch/pytorch/issues/141256
"""

import torch
from torch import nn


def make_backbone():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16))


torch.manual_seed(0)
pretrained = make_backbone()
ckpt = {"model." + k: v.clone() for k, v in pretrained.state_dict().items()}

torch.manual_seed(1)
backbone = make_backbone()
backbone.load_state_dict(ckpt, strict=False)  # BUG-LINE
head = nn.Linear(16, 2)
model = nn.Sequential(backbone, nn.ReLU(), head)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(64, 8)
y = (x[:, 0] > 0).long()
for _step in range(5):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
print("loss", loss.item())

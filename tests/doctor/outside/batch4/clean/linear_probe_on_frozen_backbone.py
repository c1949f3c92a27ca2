"""Linear probing: a pretrained feature extractor is deliberately frozen (requires_grad_(False) and eval mode so
its BatchNorm statistics stay fixed) and only a new linear head is trained. The backbone receiving no gradient
and never changing is the intended behaviour.

Source: https://pytorch.org/tutorials/beginner/finetuning_torchvision_models_tutorial.html
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
backbone = nn.Sequential(nn.Linear(20, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
backbone.requires_grad_(False)
backbone.eval()
head = nn.Linear(64, 5)
opt = torch.optim.SGD(head.parameters(), lr=0.1, momentum=0.9)
X, y = torch.randn(160, 20), torch.randint(0, 5, (160,))
for i in range(0, 160, 32):
    with torch.no_grad():
        feats = backbone(X[i : i + 32])
    loss = F.cross_entropy(head(feats), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()

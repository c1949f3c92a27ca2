"""A fine-tuning script freezes its pretrained feature extractor with ``param.require_grad = False`` (missing the
"s"): Python just sets a new attribute, every parameter still requires grad, the optimizer (built over the
parameters that require grad) updates the extractor with the head's large learning rate, and the pretrained
features are overwritten. Nothing fails.

Source: https://github.com/HengyiWang/Co-SLAM/issues/12
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
extractor = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
head = nn.Linear(64, 3)
for param in extractor.parameters():
    param.require_grad = False  # BUG-LINE
model = nn.Sequential(extractor, head)
opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.5)
X, y = torch.randn(256, 16), torch.randint(0, 3, (256,))
for i in range(0, 256, 32):
    loss = F.cross_entropy(model(X[i : i + 32]), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()

"""Source-free adaptation is meant to keep the pretrained output layer fixed, written as
``model.outc.requires_grad = False``. On an ``nn.Module`` that just sets a plain attribute; its parameters still
require grad, sit in the optimizer and are updated every step.

Source: https://github.com/CSCYQJ/MICCAI23-ProtoContra-SFDA/issues/18
"""

import torch
from torch import nn

torch.manual_seed(0)


class SegNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
        self.outc = nn.Conv2d(8, 3, 1)

    def forward(self, x):
        return self.outc(self.enc(x))


model = SegNet()
model.outc.requires_grad = False  # BUG-LINE
opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
for _step in range(5):
    x = torch.rand(4, 1, 16, 16)
    probs = model(x).softmax(1)
    loss = -(probs * probs.clamp_min(1e-8).log()).sum(1).mean()  # entropy minimisation on target data
    opt.zero_grad()
    loss.backward()
    opt.step()

"""A vision-language model's image tower has its ``forward`` decorated with ``@torch.no_grad()`` (copied from a
frozen-tower recipe) while the run is configured to tune the tower: its parameters require grad and sit in the
optimizer, but no gradient ever reaches them. Only the projector and the head learn; nothing fails.

Source: https://github.com/TinyLLaVA/TinyLLaVA_Factory/issues/17
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
TUNE_VISION_TOWER = True


class VisionTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4))

    @torch.no_grad()  # BUG-LINE
    def forward(self, images):
        return self.conv(images).flatten(1)  # (B, 8*4*4)


class TinyVLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tower = VisionTower()
        self.projector = nn.Linear(128, 32)
        self.head = nn.Linear(32, 5)

    def forward(self, images):
        return self.head(F.gelu(self.projector(self.tower(images))))


model = TinyVLM()
model.tower.requires_grad_(TUNE_VISION_TOWER)
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
images, labels = torch.randn(96, 3, 16, 16), torch.randint(0, 5, (96,))
for i in range(0, 96, 16):
    loss = F.cross_entropy(model(images[i : i + 16]), labels[i : i + 16])
    opt.zero_grad()
    loss.backward()
    opt.step()

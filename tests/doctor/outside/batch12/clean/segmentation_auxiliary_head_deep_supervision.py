"""Semantic segmentation (3 classes) of synthetic images with deep supervision as in PSPNet: an
auxiliary classifier on an intermediate feature map produces a second, coarser prediction that is
upsampled and trained with its own cross-entropy weighted by 0.4 and added to the main loss. The
auxiliary head is used only in training: at evaluation the model returns only the main output,
so the auxiliary parameters get gradients during training but play no part in inference. The
extra loss term and the train-only branch are intentional.

Source: https://arxiv.org/abs/1612.01105
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)

S, C, AUX_WEIGHT = 24, 3, 0.4


def make_batch(n):
    raw = torch.randn(n, C, 4, 4)
    field = F.interpolate(raw, size=(S, S), mode="bilinear", align_corners=False)
    target = field.argmax(1)
    img = field.sum(1, keepdim=True) * 0.3 + field + 0.3 * torch.randn_like(field)
    return img, target


class DeepSupNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stage1 = nn.Sequential(nn.Conv2d(C, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.stage2 = nn.Sequential(nn.Conv2d(32, 48, 3, padding=1), nn.ReLU())
        self.main_head = nn.Sequential(nn.Conv2d(48, 48, 3, padding=1), nn.ReLU(), nn.Conv2d(48, C, 1))
        self.aux_head = nn.Conv2d(32, C, 1)

    def forward(self, x):
        f1 = self.stage1(x)
        out = F.interpolate(self.main_head(self.stage2(f1)), size=x.shape[-2:], mode="bilinear", align_corners=False)
        if self.training:
            aux = F.interpolate(self.aux_head(f1), size=x.shape[-2:], mode="bilinear", align_corners=False)
            return out, aux
        return out


model = DeepSupNet()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for step in range(50):
    img, target = make_batch(16)
    out, aux = model(img)
    main_loss = F.cross_entropy(out, target)
    aux_loss = F.cross_entropy(aux, target)
    loss = main_loss + AUX_WEIGHT * aux_loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step} main {main_loss.item():.4f} aux {aux_loss.item():.4f}")

model.eval()
with torch.no_grad():
    img, target = make_batch(64)
    print(f"pixel accuracy {(model(img).argmax(1) == target).float().mean().item():.3f}")

"""Segmentation head trained on a frozen, BatchNorm-containing backbone with batch size 2.

Unusual but correct: the backbone (pretrained here for a few steps on a pretext task)
is frozen, and because the per-step batch is tiny the BatchNorm layers are put in
eval() mode *during training* so the running statistics stay fixed, while the head is in
train mode. model.eval() only changes BN/dropout behaviour; it does not stop gradient
tracking, so the head still learns. Inputs and model use channels_last memory format.
The loss is per-pixel cross-entropy on (N, C, H, W) logits.

Source: https://github.com/isht7/pytorch-deeplab-resnet/issues/39
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

C, H = 3, 8
g = torch.Generator().manual_seed(1)
masks = F.interpolate(torch.randint(0, C, (256, 1, 2, 2), generator=g).float(), size=(H, H)).long().squeeze(1)
colors = torch.randn(C, 3, generator=g)
imgs = (colors[masks].permute(0, 3, 1, 2) + 0.6 * torch.randn(256, 3, H, H, generator=g)).contiguous()

backbone = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1),
    nn.BatchNorm2d(16),
    nn.ReLU(),
    nn.Conv2d(16, 16, 3, padding=1),
    nn.BatchNorm2d(16),
    nn.ReLU(),
)
pre_head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 3))
pre_opt = torch.optim.Adam(list(backbone.parameters()) + list(pre_head.parameters()), lr=3e-3)
for step in range(30):
    i = torch.randint(0, 256, (64,))
    target = imgs[i].mean(dim=(2, 3))
    l = F.mse_loss(pre_head(backbone(imgs[i])), target)
    pre_opt.zero_grad()
    l.backward()
    pre_opt.step()
print("pretext loss", round(l.item(), 4))

for p in backbone.parameters():
    p.requires_grad_(False)
head = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, C, 1))
model = nn.Sequential(backbone, head).to(memory_format=torch.channels_last)
opt = torch.optim.SGD(head.parameters(), lr=0.05, momentum=0.9)
rm_before = backbone[1].running_mean.clone()

for step in range(150):
    model.train()
    backbone.eval()
    i = torch.randint(0, 256, (2,))
    x = imgs[i].to(memory_format=torch.channels_last)
    logits = model(x)
    loss = F.cross_entropy(logits, masks[i])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 30 == 0:
        print(f"step {step} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    pred = model(imgs[200:].to(memory_format=torch.channels_last)).argmax(1)
print("pixel acc", (pred == masks[200:]).float().mean().item())
print("running stats unchanged", torch.equal(rm_before, backbone[1].running_mean))

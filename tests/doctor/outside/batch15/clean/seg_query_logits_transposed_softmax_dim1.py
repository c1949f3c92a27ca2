"""Per-pixel segmentation with a token (sequence) model: logits come out as (B, HW, C).

Unusual but correct: F.cross_entropy wants the class axis at dim 1, so the (B, HW, C)
logits are transposed to (B, C, HW) before the loss (the MaskFormer authors answer
exactly this question), and the soft Dice term takes softmax over dim=1 of that layout,
which is the class axis here even though it is not the last axis. Targets are
(B, HW) class indices; Dice uses one-hot targets permuted to the same layout.

Source: https://github.com/facebookresearch/MaskFormer/issues/27
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
imgs = (colors[masks].permute(0, 3, 1, 2) + 0.7 * torch.randn(256, 3, H, H, generator=g)).contiguous()


class TokenSeg(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.embed = nn.Conv2d(3, d, 3, padding=1)
        self.pos = nn.Parameter(torch.randn(1, H * H, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, 4, 64, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 1)
        self.cls = nn.Linear(d, C)

    def forward(self, x):
        t = self.embed(x).flatten(2).transpose(1, 2) + self.pos
        return self.cls(self.enc(t))


model = TokenSeg()
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
for step in range(60):
    i = torch.randint(0, 200, (8,))
    target = masks[i].flatten(1)
    logits = model(imgs[i]).transpose(1, 2)
    ce = F.cross_entropy(logits, target)
    prob = logits.softmax(dim=1)
    onehot = F.one_hot(target, C).permute(0, 2, 1).float()
    inter = (prob * onehot).sum(dim=2)
    dice = 1 - ((2 * inter + 1) / (prob.sum(2) + onehot.sum(2) + 1)).mean()
    loss = ce + dice
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step} ce {ce.item():.3f} dice {dice.item():.3f}")
with torch.no_grad():
    pred = model(imgs[200:]).argmax(-1)
print("pixel acc", (pred == masks[200:].flatten(1)).float().mean().item())

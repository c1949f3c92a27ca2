"""Trains a tiny fully convolutional network for per-pixel semantic segmentation of synthetic
images (each pixel's class is the colour channel that dominates it locally). Before the
cross-entropy, the (B, C, H, W) logits are flattened with `.view(-1, C)` instead of first moving
the class axis last, so every "pixel row" handed to the loss mixes class scores from C different
pixels of the same class map. The shapes still agree with the flattened (B*H*W,) target, so the
loss runs without any error or warning from the first step, but the network is optimised against
scrambled pixel/class pairs and per-pixel accuracy stays near chance.

Source: https://stackoverflow.com/questions/57155970
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)

C = 3
H = W = 16


def make_batch(n):
    # smooth random colour fields; label = dominant channel of the smoothed field
    raw = torch.randn(n, C, H // 4, W // 4)
    field = F.interpolate(raw, size=(H, W), mode="bilinear", align_corners=False)
    target = field.argmax(dim=1)
    img = field + 0.3 * torch.randn_like(field)
    return img, target


class TinyFCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(C, 32, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(32, 32, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(32, C, 1),
        )

    def forward(self, x):
        return self.body(x)


model = TinyFCN()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)

for step in range(60):
    img, target = make_batch(16)
    logits = model(img)  # (B, C, H, W)
    flat_logits = logits.view(-1, C)  # BUG-LINE
    loss = F.cross_entropy(flat_logits, target.view(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step} loss {loss.item():.4f}")

with torch.no_grad():
    img, target = make_batch(64)
    pred = model(img).argmax(dim=1)
    acc = (pred == target).float().mean().item()
print(f"final pixel accuracy {acc:.3f}")

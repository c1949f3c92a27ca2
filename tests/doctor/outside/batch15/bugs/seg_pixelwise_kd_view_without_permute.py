"""Semantic segmentation distillation: tiny FCN student learns from a wider FCN teacher
with a pixel-wise KL term on top of per-pixel cross-entropy.

To compute a per-pixel class distribution, the (N, C, H, W) logits are flattened with
.view(-1, C) directly, without first moving the class axis last (permute(0, 2, 3, 1)).
Each "row" of the flattened tensor then mixes values from different classes and
different pixels, so the softmax is taken over the wrong groups of numbers and the
pixel-wise distillation term matches meaningless distributions. It runs without error
and the combined loss still goes down.

Source: https://github.com/irfanICMLL/structure_knowledge_distillation/issues/11
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

C, H = 3, 8
g = torch.Generator().manual_seed(1)
masks = torch.randint(0, C, (256, 1, 2, 2), generator=g)
masks = F.interpolate(masks.float(), size=(H, H), mode="nearest").long().squeeze(1)
colors = torch.randn(C, 3, generator=g)
imgs = colors[masks].permute(0, 3, 1, 2) + 0.8 * torch.randn(256, 3, H, H, generator=g)
imgs = imgs.contiguous()


def fcn(w):
    return nn.Sequential(
        nn.Conv2d(3, w, 3, padding=1), nn.ReLU(), nn.Conv2d(w, w, 3, padding=1), nn.ReLU(), nn.Conv2d(w, C, 1)
    )


teacher, student = fcn(24), fcn(6)
opt_t = torch.optim.Adam(teacher.parameters(), lr=3e-3)
for step in range(40):
    i = torch.randint(0, 256, (32,))
    loss = F.cross_entropy(teacher(imgs[i]), masks[i])
    opt_t.zero_grad()
    loss.backward()
    opt_t.step()
teacher.eval()
print("teacher seg loss", round(loss.item(), 3))


def flat(z):
    return z.view(-1, z.shape[1])  # BUG-LINE


opt = torch.optim.Adam(student.parameters(), lr=3e-3)
for step in range(80):
    i = torch.randint(0, 256, (32,))
    x, y = imgs[i], masks[i]
    with torch.no_grad():
        t = teacher(x)
    s = student(x)
    p_t = F.softmax(flat(t), dim=1)
    logp_s = F.log_softmax(flat(s), dim=1)
    loss_pi = F.kl_div(logp_s, p_t, reduction="batchmean")
    loss = F.cross_entropy(s, y) + 2.0 * loss_pi
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step} loss {loss.item():.3f} pi {loss_pi.item():.4f}")
print("final", loss.item())

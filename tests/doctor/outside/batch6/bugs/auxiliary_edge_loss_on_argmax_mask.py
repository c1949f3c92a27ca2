"""A hair-segmentation net adds an image-gradient consistency loss computed on ``pred.argmax(1)``. argmax has no
gradient, so that term is a constant: the total loss still backpropagates through the cross-entropy part and
training runs, but the auxiliary loss that the method depends on contributes nothing.

Source: https://github.com/wonbeomjang/mobile-hair-segmentation-pytorch/issues/3
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 2, 3, padding=1))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
images = torch.randn(16, 3, 24, 24)
masks = (images.mean(1) > 0).long()


def gradient_consistency(pred_mask, image):
    gx_p = pred_mask[..., :, 1:] - pred_mask[..., :, :-1]
    gx_i = image.mean(1, keepdim=True)[..., :, 1:] - image.mean(1, keepdim=True)[..., :, :-1]
    return (gx_p * (1 - gx_i.abs())).abs().mean()


for i in range(0, 16, 4):
    x, m = images[i : i + 4], masks[i : i + 4]
    logits = net(x)
    hard = logits.argmax(1).view(x.size(0), 1, 24, 24).float()  # BUG-LINE
    loss = F.cross_entropy(logits, m) + 0.5 * gradient_consistency(hard, x)
    opt.zero_grad()
    loss.backward()
    opt.step()

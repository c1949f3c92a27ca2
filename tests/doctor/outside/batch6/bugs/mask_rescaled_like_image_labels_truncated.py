"""The dataset applies the same to-tensor conversion to the image and to the uint8 class-index mask, and that
conversion divides by 255. Class ids 1..4 become 0.004..0.016 and ``.long()`` truncates them all to 0, so the
segmentation net is trained to predict background everywhere; the loss drops quickly and nothing fails.

Source: https://github.com/pytorch/vision/issues/2497
"""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
rng = np.random.default_rng(0)


def to_tensor(arr):
    return torch.from_numpy(arr).float().div(255.0)


images = rng.integers(0, 256, size=(32, 16, 16), dtype=np.uint8)
masks = (images // 52).astype(np.uint8)
net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 5, 1))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
for i in range(0, 32, 8):
    x = to_tensor(images[i : i + 8]).unsqueeze(1)
    target = to_tensor(masks[i : i + 8]).long()  # BUG-LINE
    loss = F.cross_entropy(net(x), target)
    opt.zero_grad()
    loss.backward()
    opt.step()

"""Images and their integer label maps are downscaled with the same bilinear resize; on the label map this
averages neighbouring class ids and the ``.round().long()`` afterwards produces class ids that were never
there (e.g. 1 between 0 and 2) along every boundary. The net trains on corrupted labels without any error.

Source: https://github.com/shekkizh/FCN.tensorflow/issues/4
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 3, 1))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
images = torch.randn(24, 3, 32, 32)
labels = torch.where(images[:, 0] > 0.5, 2, 0)
for i in range(0, 24, 6):
    img = F.interpolate(images[i : i + 6], size=(16, 16), mode="bilinear", align_corners=False)
    lab = F.interpolate(labels[i : i + 6, None].float(), size=(16, 16), mode="bilinear")  # BUG-LINE
    lab = lab.round().long().squeeze(1)
    loss = F.cross_entropy(net(img), lab)
    opt.zero_grad()
    loss.backward()
    opt.step()

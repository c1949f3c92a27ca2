"""Images and their label masks are both downsampled with bilinear interpolation.
On the integer class mask this averages neighbouring class ids, producing label
values that do not exist in the original mask (for example a 1 on the border
between class 0 and class 2) and the network is trained on these invented
labels along every object boundary.

Source: https://github.com/ykamikawa/tf-keras-PSPNet/issues/2
"""

import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
images = torch.randn(8, 3, 32, 32)
masks = torch.zeros(8, 1, 32, 32)
masks[:, :, :, 16:] = 2.0
masks[:, :, 20:, :] = 4.0


def preprocess(img, mask):
    img = F.interpolate(img, size=(13, 13), mode="bilinear", align_corners=False)
    mask = F.interpolate(mask, size=(13, 13), mode="bilinear", align_corners=False)  # BUG-LINE
    return img, mask.round().long().squeeze(1)


net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 5, 1))
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
x, y = preprocess(images, masks)
for _step in range(5):
    opt.zero_grad()
    loss = F.cross_entropy(net(x), y)
    loss.backward()
    opt.step()
print("loss", loss.item())

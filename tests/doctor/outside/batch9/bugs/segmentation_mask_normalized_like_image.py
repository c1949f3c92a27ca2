"""The same transform (including Normalize) is applied to the image and the segmentation mask.

The dataset runs its image transform, which divides by 255 and normalises with mean/std, on the
label mask too. Class ids 0..3 become values near -2, and casting back to long (clamped at 0) turns
every pixel into class 0, so the model is trained on wrong targets from step 1.
Source: https://github.com/jnkl314/DeepLabV3FineTuning/issues/5
"""

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

MEAN, STD = 0.45, 0.225


def transform(t):
    return (t.float() / 255.0 - MEAN) / STD


class SegData(Dataset):
    def __init__(self, n=32):
        g = torch.Generator().manual_seed(0)
        self.masks = torch.randint(0, 4, (n, 16, 16), generator=g)
        self.images = (self.masks.unsqueeze(1) * 60 + torch.randint(0, 20, (n, 1, 16, 16), generator=g)).clamp(0, 255)

    def __len__(self):
        return len(self.masks)

    def __getitem__(self, i):
        img = transform(self.images[i])
        mask = transform(self.masks[i]).long().clamp(min=0)  # BUG-LINE
        return img, mask


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(16, 4, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
loader = DataLoader(SegData(), batch_size=8, shuffle=True)
for _epoch in range(2):
    for img, mask in loader:
        loss = F.cross_entropy(model(img), mask)
        opt.zero_grad()
        loss.backward()
        opt.step()
print(f"seg loss {loss.item():.4f}")

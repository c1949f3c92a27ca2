"""MLP on synthetic 8-bit images converted with .float() but not scaled to [0, 1]: the first logits are in
the hundreds and the first loss is far above ln(10).

doctor-expect: first_loss
"""

import torch
from torch import nn

torch.manual_seed(0)
images = torch.randint(0, 256, (1024, 1, 12, 12), dtype=torch.uint8)
labels = (images.float().mean(dim=(1, 2, 3)) > 127.5).long() * 3 + torch.randint(0, 7, (1024,))
X = images.float()  # bug: should be images.float() / 255 (and normalised)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, labels), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Flatten(), nn.Linear(144, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
for xb, yb in loader:
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()

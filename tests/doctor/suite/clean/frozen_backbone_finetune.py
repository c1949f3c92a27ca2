"""Clean: a frozen backbone (requires_grad False, run under no_grad in eval mode) and a trained head;
the optimizer gets only the head's parameters."""

import torch
from torch import nn

torch.manual_seed(0)
backbone = nn.Sequential(nn.Linear(16, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 64))
backbone.requires_grad_(False)
backbone.eval()
head = nn.Linear(64, 5)
opt = torch.optim.SGD(head.parameters(), lr=0.05, momentum=0.9)
X, y = torch.randn(512, 16), torch.randint(0, 5, (512,))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=32, shuffle=True)
for xb, yb in loader:
    with torch.no_grad():
        feats = backbone(xb)
    loss = nn.functional.cross_entropy(head(feats), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()

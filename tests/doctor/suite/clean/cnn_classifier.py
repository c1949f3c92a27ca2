"""Clean: small CNN with batch norm and dropout; validation with model.eval() + no_grad, then train() again."""

import torch
from torch import nn

torch.manual_seed(0)
X, y = torch.randn(512, 1, 16, 16), torch.randint(0, 4, (512,))
Xv, yv = torch.randn(64, 1, 16, 16), torch.randint(0, 4, (64,))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=32, shuffle=True)
model = nn.Sequential(
    nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Dropout(0.2), nn.Linear(8 * 8 * 8, 4),
)  # fmt: skip
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step, (xb, yb) in enumerate(loader):
    if step % 5 == 0:
        model.eval()
        with torch.no_grad():
            acc = (model(Xv).argmax(1) == yv).float().mean().item()
        model.train()
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()

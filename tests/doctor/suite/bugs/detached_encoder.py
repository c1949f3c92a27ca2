"""Encoder + classifier head; forward detaches the encoder's output, so the encoder never trains.

doctor-expect: no_gradient_reached
"""

import torch
from torch import nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(12, 48), nn.GELU(), nn.Linear(48, 48))
        self.head = nn.Linear(48, 3)

    def forward(self, x):
        h = self.encoder(x).detach()  # bug: meant to log h, cut the graph instead
        return self.head(h)


X, y = torch.randn(512, 12), torch.randint(0, 3, (512,))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=32, shuffle=True)
model = Net()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for xb, yb in loader:
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()

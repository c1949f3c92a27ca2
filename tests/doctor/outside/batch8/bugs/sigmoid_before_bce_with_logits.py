"""Output head applies a sigmoid and the result is passed to BCEWithLogitsLoss.

BCEWithLogitsLoss applies its own sigmoid, so predictions are squashed twice
into [0.5, 0.73]; the loss can never reach small values and gradients for
confident examples are tiny.  The head should return raw logits.
Source: https://github.com/Turoad/lanedet/issues/32
"""

import torch
import torch.nn as nn

torch.manual_seed(0)


class ExistHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, x):
        return torch.sigmoid(self.fc(x))  # BUG-LINE


model = ExistHead()
criterion = nn.BCEWithLogitsLoss()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(64, 20)
y = (x[:, :4] > 0).float()
for _step in range(8):
    opt.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")

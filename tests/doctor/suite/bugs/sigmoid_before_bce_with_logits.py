"""Binary classifier that applies sigmoid in forward and then BCEWithLogitsLoss (sigmoid twice).

doctor-expect: sigmoid_before_bce_with_logits
"""

import torch
from torch import nn

torch.manual_seed(0)
X = torch.randn(512, 8)
y = (X[:, 0] * X[:, 1] > 0).float().unsqueeze(1)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1), nn.Sigmoid())
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.BCEWithLogitsLoss()
for xb, yb in loader:
    loss = loss_fn(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()

"""A regression net meant to output a probability ends in ``nn.Softmax(dim=1)`` over its single output unit: the
softmax of one number is always 1, so the prediction is the constant 1, the loss never changes and no weight
gets a nonzero gradient. The user expected a value in [0, 1] (a sigmoid).

Source: https://example-a.com/answer/63909566
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(
    nn.Linear(5, 32),
    nn.ReLU(),
    nn.Linear(32, 1),
    nn.Softmax(dim=1),  # BUG-LINE
)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
X = torch.randn(256, 5)
p = torch.sigmoid(X @ torch.randn(5, 1))  # target probabilities
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, p), batch_size=32, shuffle=True)
for _epoch in range(2):
    for xb, pb in loader:
        loss = F.mse_loss(model(xb), pb)
        opt.zero_grad()
        loss.backward()
        opt.step()

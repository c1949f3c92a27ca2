"""Small CNN on synthetic 16x16 images; the model ends in Softmax and the loss is CrossEntropyLoss.

doctor-expect: softmax_before_cross_entropy
"""

import torch
from torch import nn

torch.manual_seed(0)
X = torch.randn(256, 1, 16, 16)
y = (X.mean(dim=(1, 2, 3)) > 0).long()
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=32, shuffle=True)
model = nn.Sequential(
    nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 8 * 8, 2), nn.Softmax(dim=1)
)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss()
for xb, yb in loader:
    opt.zero_grad()
    loss = loss_fn(model(xb), yb)
    loss.backward()
    opt.step()

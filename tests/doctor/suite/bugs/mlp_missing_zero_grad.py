"""MLP classifier on synthetic blobs; the loop never calls zero_grad, so gradients add up step over step.

doctor-expect: missing_zero_grad
"""

import torch
from torch import nn

torch.manual_seed(0)
X = torch.randn(512, 20)
y = (X[:, :4].sum(1) > 0).long() + (X[:, 4] > 1).long()
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()

for _epoch in range(2):
    for xb, yb in loader:
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
print("done", float(loss))

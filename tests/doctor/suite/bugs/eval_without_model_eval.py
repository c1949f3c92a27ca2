"""Classifier with dropout and batch norm; the periodic validation uses no_grad but not model.eval().

doctor-expect: eval_in_train_mode
"""

import torch
from torch import nn

torch.manual_seed(0)
X, y = torch.randn(1024, 16), torch.randint(0, 3, (1024,))
Xv, yv = torch.randn(128, 16), torch.randint(0, 3, (128,))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(16, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step, (xb, yb) in enumerate(loader):
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        with torch.no_grad():  # bug: model is still in train() mode
            val_acc = (model(Xv).argmax(1) == yv).float().mean()

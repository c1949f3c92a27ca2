"""Tabular 3-class classification where the categorical columns are one-hot encoded before training, and the
target column 'segment' is encoded with them: its one-hot columns sit in the feature matrix, so the model reads
the answer.

doctor-expect: label_leak
"""

import torch
from torch import nn

torch.manual_seed(0)
n = 1200
tenure, spend = torch.rand(n) * 10, torch.randn(n) * 30 + 100
region = torch.randint(0, 4, (n,))
segment = ((spend > 110).long() + (tenure > 6).long()).clamp(max=2)  # the target: 0, 1 or 2
numeric = torch.stack([tenure, spend], dim=1)
numeric = (numeric - numeric.mean(0)) / numeric.std(0)
categorical = [region, segment]  # bug: the target is one-hot encoded along with the real categorical column
X = torch.cat([numeric] + [nn.functional.one_hot(c).float() for c in categorical], dim=1)
y = segment
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(X.shape[1], 32), nn.ReLU(), nn.Linear(32, 3))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _epoch in range(3):
    for xb, yb in loader:
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()

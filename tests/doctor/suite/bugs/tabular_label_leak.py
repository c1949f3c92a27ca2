"""Tabular classification where the feature matrix is built from every column of the table, the label
column included (standardized with the rest): the model reads the answer.

doctor-expect: label_leak
"""

import torch
from torch import nn

torch.manual_seed(0)
n = 1024
age, income, visits = torch.rand(n) * 60 + 18, torch.randn(n) * 20 + 50, torch.poisson(torch.full((n,), 3.0))
churned = ((visits < 2) & (income < 55)).long()
table = torch.stack([age, income, visits, churned.float()], dim=1)  # columns: age, income, visits, churned
X = (table - table.mean(0)) / table.std(0)  # bug: the label column 'churned' stays in the features
y = churned
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(X.shape[1], 32), nn.ReLU(), nn.Linear(32, 2))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _epoch in range(3):
    for xb, yb in loader:
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()

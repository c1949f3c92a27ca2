"""Classifier whose forward returns raw logits, trained with F.nll_loss (which expects log-probabilities).

doctor-expect: logits_into_nll_loss
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
X, y = torch.randn(512, 10), torch.randint(0, 6, (512,))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 6))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for xb, yb in loader:
    loss = F.nll_loss(model(xb), yb)  # bug: needs F.log_softmax(model(xb), 1)
    opt.zero_grad()
    loss.backward()
    opt.step()

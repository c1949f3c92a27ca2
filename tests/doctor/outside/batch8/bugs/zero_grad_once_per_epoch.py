"""optimizer.zero_grad() is called once per epoch instead of once per iteration.

Gradients from every mini-batch of the epoch keep accumulating in .grad, so
the k-th step of the epoch applies the sum of k batch gradients.  The step
size silently grows within each epoch and the updates no longer correspond
to the current batch.
Source: https://github.com/pytorch/pytorch/issues/47175
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.02)
x = torch.randn(64, 6)
y = x.sum(1, keepdim=True)

for _epoch in range(2):
    opt.zero_grad()  # BUG-LINE
    for i in range(0, 64, 16):
        loss = nn.functional.mse_loss(model(x[i : i + 16]), y[i : i + 16])
        loss.backward()
        opt.step()
print(f"loss {loss.item():.4f}")

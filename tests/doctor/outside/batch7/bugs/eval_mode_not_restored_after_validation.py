"""The validation routine switches the model to eval() but the training loop never
calls model.train() again. After the first validation pass, every later training
step runs with dropout disabled (and batch-norm would use frozen running stats),
so the regularisation the model was designed with silently disappears for the
rest of training.

Source: https://github.com/shubhamagarwal92/mmd/issues/14
"""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 3))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(128, 10)
y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
xv, yv = torch.randn(32, 10), torch.randint(0, 3, (32,))


def evaluate():
    model.eval()  # BUG-LINE
    with torch.no_grad():
        return nn.functional.cross_entropy(model(xv), yv).item()


model.train()
for _epoch in range(3):
    for i in range(0, 128, 32):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x[i : i + 32]), y[i : i + 32])
        loss.backward()
        opt.step()
    val = evaluate()
print("train", loss.item(), "val", val)

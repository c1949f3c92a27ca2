"""Model stays in eval mode for every epoch after the first validation pass.

The validation helper calls model.eval() but the training loop never calls
model.train() again, so from the second epoch on dropout is disabled and
BatchNorm normalises with running statistics instead of batch statistics.
Training silently continues in inference mode.
Source: https://github.com/pytorch/tutorials/issues/1624
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = nn.CrossEntropyLoss()
x_train, y_train = torch.randn(64, 8), torch.randint(0, 2, (64,))
x_val, y_val = torch.randn(32, 8), torch.randint(0, 2, (32,))


def validate():
    model.eval()
    with torch.no_grad():
        return loss_fn(model(x_val), y_val).item()


def train_epoch():
    for i in range(0, 64, 16):
        opt.zero_grad()
        loss = loss_fn(model(x_train[i : i + 16]), y_train[i : i + 16])
        loss.backward()
        opt.step()
    return loss.item()


model.train()  # BUG-LINE
for _epoch in range(3):
    tr = train_epoch()
    va = validate()
print(f"train {tr:.3f} val {va:.3f} training_flag={model.training}")

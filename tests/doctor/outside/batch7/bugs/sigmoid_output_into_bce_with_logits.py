"""The recommender's scoring head already applies torch.sigmoid, and the result is
fed to nn.BCEWithLogitsLoss, which applies a second sigmoid. Predictions are then
confined to sigmoid([0, 1]) = [0.5, 0.73]: negatives can never be scored below
0.5, the loss cannot converge and the gradient is shrunk by the extra sigmoid.

Source: https://github.com/yudi-mars/daisyRec/pull/15
"""

import torch
from torch import nn


class MF(nn.Module):
    def __init__(self, n_users=20, n_items=30, dim=8):
        super().__init__()
        self.u = nn.Embedding(n_users, dim)
        self.i = nn.Embedding(n_items, dim)

    def forward(self, users, items):
        score = (self.u(users) * self.i(items)).sum(-1)
        return torch.sigmoid(score)  # BUG-LINE


torch.manual_seed(0)
model = MF()
criterion = nn.BCEWithLogitsLoss()
opt = torch.optim.Adam(model.parameters(), lr=0.05)
users = torch.randint(0, 20, (256,))
items = torch.randint(0, 30, (256,))
labels = ((users + items) % 2).float()
for _step in range(8):
    opt.zero_grad()
    loss = criterion(model(users, items), labels)
    loss.backward()
    opt.step()
print("loss", loss.item())

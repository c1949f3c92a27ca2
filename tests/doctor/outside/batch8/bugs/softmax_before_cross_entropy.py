"""Classifier ends in nn.Softmax and its output is fed to nn.CrossEntropyLoss.

CrossEntropyLoss already applies log_softmax, so the probabilities are squashed
a second time; the loss can never approach zero and gradients shrink as the
model becomes confident.  The final Softmax layer should be removed.
Source: https://github.com/nishnik/Deep-Semantic-Similarity-Model-PyTorch/issues/2
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(
    nn.Linear(10, 32),
    nn.ReLU(),
    nn.Linear(32, 4),
    nn.Softmax(dim=1),  # BUG-LINE
)
criterion = nn.CrossEntropyLoss()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(128, 10)
y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()

for _step in range(8):
    opt.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    opt.step()
print(f"final loss {loss.item():.4f}")

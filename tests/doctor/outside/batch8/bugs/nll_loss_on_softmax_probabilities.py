"""nll_loss fed with softmax probabilities instead of log-probabilities.

F.nll_loss expects log_softmax output; with plain softmax it computes -p(y),
a bounded linear objective whose gradient vanishes for wrong confident
predictions and whose value is negative.  The model trains, but on the wrong
objective.
Source: https://github.com/midas-research/man-sf-emnlp/issues/2
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 3))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(96, 12)
y = x[:, :3].argmax(1)

for _step in range(8):
    opt.zero_grad()
    probs = F.softmax(model(x), dim=1)  # BUG-LINE
    loss = F.nll_loss(probs, y)
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")

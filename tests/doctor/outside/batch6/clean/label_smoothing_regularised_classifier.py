"""Label-smoothing regularisation: the classifier is trained with ``CrossEntropyLoss(label_smoothing=0.1)``, so
the loss never reaches zero even for perfectly classified examples (the target keeps 0.1 mass spread over all
classes). A loss that plateaus above zero is the expected behaviour, not a bug.

Source: https://arxiv.org/abs/1512.00567
"""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 10))
crit = nn.CrossEntropyLoss(label_smoothing=0.1)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
X, y = torch.randn(320, 16), torch.randint(0, 10, (320,))
X[:, :10] += 3 * nn.functional.one_hot(y, 10).float()
for i in range(0, 320, 32):
    loss = crit(model(X[i : i + 32]), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()

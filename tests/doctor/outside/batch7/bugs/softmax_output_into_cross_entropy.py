"""The classifier ends with a softmax layer and its probabilities are passed to
nn.CrossEntropyLoss, which applies log-softmax itself. The double softmax squashes
the effective logits into [0, 1], so the loss can never get close to zero and the
gradients reaching the network are much smaller than they should be: training
stalls near a high loss plateau.

Source: https://github.com/bowang-lab/Transformer-GCN-QA/pull/32
"""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(
    nn.Linear(12, 32),
    nn.ReLU(),
    nn.Linear(32, 4),
    nn.Softmax(dim=-1),  # BUG-LINE
)
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.5)
x = torch.randn(96, 12)
y = x[:, :4].argmax(dim=1)
for _step in range(8):
    opt.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    opt.step()
print("loss", loss.item())

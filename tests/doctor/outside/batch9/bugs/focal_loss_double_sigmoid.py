"""A sigmoid is applied to the logits before binary_cross_entropy_with_logits, which applies it again.

The inputs to the loss are squashed into [0, 1] and then passed through a second sigmoid, so
the predicted probability can never drop below 0.5; negatives always produce large loss and the
gradients to the logits are shrunk and biased from the first step.
Source: https://github.com/itakurah/focal-loss-pytorch/pull/5
"""

import torch
import torch.nn.functional as F


def focal_loss(logits, target, gamma=2.0):
    probs = torch.sigmoid(logits)  # BUG-LINE
    bce = F.binary_cross_entropy_with_logits(probs, target, reduction="none")
    p_t = torch.exp(-bce)
    return ((1 - p_t) ** gamma * bce).mean()


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for _step in range(8):
    x = torch.randn(64, 10)
    y = (x[:, 0] > 0.8).float().unsqueeze(1)
    loss = focal_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"focal loss {loss.item():.4f}")

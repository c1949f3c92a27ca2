"""Per-batch losses kept for the epoch summary as tensors (not ``.item()``): each list entry holds its step's
whole autograd graph, so memory grows with every step until the epoch ends.

Source: https://theneuralbase.com/pytorch/learn/intermediate/memory-leak-detection/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 12 * 12, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
images, labels = torch.randn(320, 1, 12, 12), torch.randint(0, 10, (320,))
for epoch in range(2):
    epoch_losses = []
    for start in range(0, 320, 32):
        loss = F.cross_entropy(model(images[start : start + 32]), labels[start : start + 32])
        opt.zero_grad()
        loss.backward()
        opt.step()
        epoch_losses.append(loss)  # BUG-LINE
    print(f"epoch {epoch}: mean loss {torch.stack(epoch_losses).mean().item():.3f}")

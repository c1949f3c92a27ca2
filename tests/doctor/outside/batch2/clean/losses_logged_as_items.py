"""Per-batch losses kept for the epoch summary as Python floats (``.item()``) and the last batch's output
kept detached for a debug print: nothing from an earlier step holds its graph.

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
    epoch_losses, last_logits = [], None
    for start in range(0, 320, 32):
        logits = model(images[start : start + 32])
        loss = F.cross_entropy(logits, labels[start : start + 32])
        opt.zero_grad()
        loss.backward()
        opt.step()
        epoch_losses.append(loss.item())
        last_logits = logits.detach()
    print(f"epoch {epoch}: mean loss {sum(epoch_losses) / len(epoch_losses):.3f}, last {last_logits.shape}")

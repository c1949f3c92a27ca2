"""Audio event classifier: a small 2-D CNN over synthetic log-mel spectrograms (each class is a tone band with a
class-specific temporal modulation). The script builds the model, creates the Adam optimizer from its
parameters, and then, in the "configuration" block that prints the parameter count, builds the model a second
time and keeps the new instance. The optimizer still holds the parameters of the first, now unused, model:
the new model's parameters receive gradients but are never updated, while optimizer.step() modifies tensors
that are no longer part of the forward pass. The loss just stays flat; nothing raises or warns.
Source: https://github.com/spro/practical-pytorch/issues/9
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
N_MELS, FRAMES, C = 32, 48, 5


def make_batch(n):
    y = torch.randint(0, C, (n,))
    t = torch.arange(FRAMES).float()
    x = torch.randn(n, 1, N_MELS, FRAMES) * 0.5
    for i in range(n):
        k = int(y[i])
        env = 0.5 + 0.5 * torch.sin(2 * math.pi * (k + 1) * t / FRAMES)
        x[i, 0, 4 + 5 * k : 8 + 5 * k, :] += 1.5 * env
    return x, y


def build_model():
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, C),
    )


model = build_model()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
n_params = sum(p.numel() for p in build_model().parameters())
model = build_model()  # BUG-LINE
print("model parameters:", n_params)
for step in range(60):
    x, y = make_batch(32)
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 20 == 0:
        print(f"step {step} loss {loss.item():.4f}")
xv, yv = make_batch(200)
with torch.no_grad():
    print("val acc:", (model(xv).argmax(1) == yv).float().mean().item())

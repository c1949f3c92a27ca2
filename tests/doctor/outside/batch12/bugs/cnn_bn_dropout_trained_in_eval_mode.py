"""Trains a CNN with BatchNorm and Dropout on synthetic 8-bit images (raw 0-255 pixel values;
the network relies on its first BatchNorm layer to normalise them) for 4-class texture
classification. Before training, the script runs a quick "sanity check" evaluation of the
untrained model, which switches the model to eval mode, and the training loop never switches it
back. Every optimisation step therefore runs with BatchNorm using its initial running statistics
(mean 0, variance 1, never updated) and with dropout disabled, so activations are hundreds of
times too large, the dropout regulariser is off, and optimisation is badly conditioned. No error
or warning is raised; the model ends clearly worse than the same run in training mode.

Source: https://github.com/bainjamain/pytorch-examples/issues/2
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)


def make_batch(n):
    y = torch.randint(0, 4, (n,))
    xx = torch.arange(16).float()
    imgs = []
    for c in y.tolist():
        freq = [0.4, 0.8, 1.2, 1.6][c]
        phase = float(torch.rand(1)) * 6.28
        wave = torch.sin(freq * xx + phase)
        img = wave[None, :].repeat(16, 1) if c % 2 == 0 else wave[:, None].repeat(1, 16)
        imgs.append(img)
    x = torch.stack(imgs)[:, None]
    return (128 + 60 * x + 20 * torch.randn_like(x)).clamp(0, 255), y


model = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1),
    nn.BatchNorm2d(16),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1),
    nn.BatchNorm2d(32),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Flatten(),
    nn.Dropout(0.3),
    nn.Linear(32 * 16, 4),
)


def evaluate(n=256):
    model.eval()
    with torch.no_grad():
        x, y = make_batch(n)
        return (model(x).argmax(1) == y).float().mean().item()


print(f"sanity-check accuracy before training: {evaluate():.3f}")  # BUG-LINE
opt = torch.optim.Adam(model.parameters(), lr=3e-4)
for step in range(40):
    x, y = make_batch(32)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f}")

print(f"final accuracy {evaluate(400):.3f}")

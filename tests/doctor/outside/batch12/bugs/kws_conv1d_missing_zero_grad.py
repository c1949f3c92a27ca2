"""Trains a small 1-D convolutional keyword-spotting model on synthetic filterbank features
(40 mel bins x 50 frames; each of 5 keywords is a class-specific spectro-temporal pattern placed
at a random time offset in noise). The training step calls backward() and optimizer.step() but
never clears the gradients, so every step's .grad is the running sum of all previous batches'
gradients: from the second step on the update direction is dominated by stale batches and its
size keeps growing, which with momentum SGD makes the optimisation oscillate instead of
converging. Nothing raises or warns and the loss is printed as usual.

Source: https://github.com/wenet-e2e/wekws/issues/72
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)

MELS, FRAMES, KEYWORDS = 40, 50, 5
PATTERNS = torch.randn(KEYWORDS, MELS, 12)


def make_batch(n):
    y = torch.randint(0, KEYWORDS, (n,))
    x = torch.randn(n, MELS, FRAMES)
    for i, c in enumerate(y.tolist()):
        t0 = int(torch.randint(0, FRAMES - 12, (1,)))
        x[i, :, t0 : t0 + 12] += 1.2 * PATTERNS[c]
    return x, y


class KWSNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(MELS, 64, 5, padding=2),
            nn.BatchNorm1d(64),
            nn.ReLU(),
            nn.Conv1d(64, 64, 5, padding=2),
            nn.BatchNorm1d(64),
            nn.ReLU(),
            nn.Conv1d(64, 64, 3, padding=2, dilation=2),
            nn.BatchNorm1d(64),
            nn.ReLU(),
        )
        self.fc = nn.Linear(64, KEYWORDS)

    def forward(self, x):
        return self.fc(self.net(x).amax(dim=2))


model = KWSNet()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

for step in range(60):
    x, y = make_batch(32)
    loss = F.cross_entropy(model(x), y)
    loss.backward()  # BUG-LINE
    optimizer.step()
    if step % 10 == 0:
        gnorm = torch.sqrt(sum((p.grad**2).sum() for p in model.parameters()))
        print(f"step {step} loss {loss.item():.4f} grad-norm {gnorm.item():.2f}")

model.eval()
with torch.no_grad():
    x, y = make_batch(400)
    acc = (model(x).argmax(1) == y).float().mean().item()
print(f"final accuracy {acc:.3f}")

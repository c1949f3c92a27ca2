"""Trains a small CNN image classifier (10 classes) on synthetic 16x16 images whose class is
encoded by the position of a bright blob. The model's forward returns `softmax(logits)` and the
training loop feeds that to `nn.CrossEntropyLoss`, which applies log-softmax itself. The loss is
therefore computed on probabilities squashed into [0, 1]: it can never drop much below
log(10) - 1, the gradients are heavily damped, and training crawls. Nothing errors or warns, the
loss value looks plausible (about 2.3), so the mistake is silent.

Source: https://github.com/FedML-AI/FedML/pull/66
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)

NUM_CLASSES = 10


def make_batch(n):
    labels = torch.randint(0, NUM_CLASSES, (n,))
    imgs = 1.0 * torch.randn(n, 1, 16, 16)
    for i, c in enumerate(labels.tolist()):
        r, col = divmod(c, 5)
        imgs[i, 0, 2 + r * 7 : 6 + r * 7, 1 + col * 3 : 4 + col * 3] += 1.0
    return imgs, labels


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.fc = nn.Linear(32 * 4 * 4, NUM_CLASSES)

    def forward(self, x):
        logits = self.fc(self.features(x).flatten(1))
        return F.softmax(logits, dim=1)  # BUG-LINE


model = SmallCNN()
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

for step in range(50):
    x, y = make_batch(32)
    loss = criterion(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step} loss {loss.item():.4f}")

with torch.no_grad():
    x, y = make_batch(400)
    acc = (model(x).argmax(1) == y).float().mean().item()
print(f"final accuracy {acc:.3f}")

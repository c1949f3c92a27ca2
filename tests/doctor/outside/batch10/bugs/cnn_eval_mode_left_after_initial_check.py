"""Trains a small BatchNorm + Dropout CNN on synthetic 4-class "bright quadrant" images. Before the first
optimizer step the script measures validation accuracy with a helper that switches the model to eval mode,
exactly like the periodic accuracy check in the report. The helper only restores training mode when asked to,
and the call site never asks, so every training step runs with BatchNorm using its (never updated) running
statistics and with Dropout disabled. Nothing raises or warns: the loss still goes down, the model is simply
trained in inference mode for the whole run.
Source: https://github.com/facebookresearch/clevr-iep/pull/22
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


def make_data(n):
    x = torch.randn(n, 3, 16, 16) * 0.6
    y = torch.randint(0, 4, (n,))
    for i in range(n):
        r, c = (int(y[i]) // 2) * 8, (int(y[i]) % 2) * 8
        x[i, :, r : r + 8, c : c + 8] += 0.8
    return x, y


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.b1 = nn.BatchNorm2d(16)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.b2 = nn.BatchNorm2d(32)
        self.drop = nn.Dropout(0.3)
        self.fc = nn.Linear(32, 4)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.b1(self.c1(x))), 2)
        x = F.relu(self.b2(self.c2(x)))
        x = x.mean((2, 3))
        return self.fc(self.drop(x))


def check_accuracy(model, x, y, restore_train=False):
    model.eval()
    with torch.no_grad():
        acc = (model(x).argmax(1) == y).float().mean().item()
    if restore_train:
        model.train()
    return acc


xtr, ytr = make_data(512)
xva, yva = make_data(256)
model = SmallCNN()
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

model.train()
print("val acc before training:", check_accuracy(model, xva, yva))  # BUG-LINE
for step in range(60):
    idx = torch.randint(0, len(xtr), (64,))
    loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step} loss {loss.item():.4f} training-mode={model.training}")
print("running_mean of first BN (first 3):", model.b1.running_mean[:3].tolist())
print("final val acc:", check_accuracy(model, xva, yva, restore_train=True))

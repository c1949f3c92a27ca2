"""Keyword-spotting style CNN on log-mel spectrogram patches with OneCycleLR.

Unusual but correct: the OneCycleLR scheduler is stepped after EVERY optimizer
step (per batch), not per epoch; total_steps = epochs * steps_per_epoch, so the
learning rate warms up and anneals across the whole run. The optimizer's initial
lr is overridden by the scheduler (max_lr / div_factor). The PyTorch docs state
that this policy changes the learning rate after every batch and step() should
be called after a batch has been used for training.

Source: https://www.docs4dev.com/docs/pytorch/2.1/generated/torch.optim.lr_scheduler.onecyclelr.html
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_CLS, MELS, T = 5, 16, 24
freq_band = torch.randint(0, MELS - 4, (N_CLS,))


def make(n):
    y = torch.randint(0, N_CLS, (n,))
    x = torch.randn(n, 1, MELS, T) * 0.5
    for i in range(n):
        b = freq_band[y[i]]
        x[i, 0, b : b + 4, 6:18] += 2.5
    return x, y


X, Y = make(640)
EPOCHS, BS = 4, 64
steps_per_epoch = len(X) // BS

model = nn.Sequential(
    nn.Conv2d(1, 8, 3, padding=1),
    nn.BatchNorm2d(8),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Conv2d(8, 16, 3, padding=1),
    nn.BatchNorm2d(16),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    nn.Flatten(),
    nn.Linear(16, N_CLS),
)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, epochs=EPOCHS, steps_per_epoch=steps_per_epoch)
for epoch in range(EPOCHS):
    perm = torch.randperm(len(X))
    for i in range(steps_per_epoch):
        idx = perm[i * BS : (i + 1) * BS]
        loss = F.cross_entropy(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    print(f"epoch {epoch} loss {loss.item():.4f} lr now {sched.get_last_lr()[0]:.5f}")

model.eval()
with torch.no_grad():
    xt, yt = make(200)
    print("test accuracy", (model(xt).argmax(1) == yt).float().mean().item())

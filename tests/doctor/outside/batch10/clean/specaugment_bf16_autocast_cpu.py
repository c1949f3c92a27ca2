"""Speech-command style classifier on synthetic log-mel spectrograms with SpecAugment (random frequency and
time masks, applied only to training batches) and CPU mixed precision: the forward pass runs under
torch.autocast("cpu", dtype=torch.bfloat16), the logits are cast to float32 and the loss is computed outside
the autocast region, and backward/step run in full precision on float32 master weights. bfloat16 has the
float32 exponent range, so no GradScaler is used. Evaluation uses un-masked inputs in eval mode.
Source: https://arxiv.org/abs/1904.08779
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
MELS, FRAMES, C = 32, 48, 4


def batch(n):
    y = torch.randint(0, C, (n,))
    t = torch.arange(FRAMES).float()
    x = torch.randn(n, 1, MELS, FRAMES) * 0.5
    for i in range(n):
        k = int(y[i])
        x[i, 0, 3 + 7 * k : 8 + 7 * k] += 1.5 * (0.5 + 0.5 * torch.sin(2 * math.pi * (k + 1) * t / FRAMES))
    return x, y


def spec_augment(x, F_max=6, T_max=8):
    x = x.clone()
    for i in range(x.shape[0]):
        f0 = int(torch.randint(0, MELS - F_max, (1,)))
        t0 = int(torch.randint(0, FRAMES - T_max, (1,)))
        x[i, :, f0 : f0 + int(torch.randint(0, F_max + 1, (1,))), :] = 0
        x[i, :, :, t0 : t0 + int(torch.randint(0, T_max + 1, (1,)))] = 0
    return x


model = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1),
    nn.BatchNorm2d(16),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1),
    nn.BatchNorm2d(32),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    nn.Flatten(),
    nn.Dropout(0.2),
    nn.Linear(32, C),
)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
for step in range(60):
    model.train()
    x, y = batch(32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(spec_augment(x))
    loss = F.cross_entropy(logits.float(), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step} loss {loss.item():.4f} logits dtype {logits.dtype}")
model.eval()
xv, yv = batch(200)
with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
    acc = (model(xv).float().argmax(1) == yv).float().mean().item()
print("val acc:", acc, "param dtype:", next(model.parameters()).dtype)

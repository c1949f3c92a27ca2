"""Trains a tiny I3D-style 3-D convolutional action classifier on synthetic video clips
(8 frames of 16x16; each of 4 "actions" is a blob moving in a class-specific direction). The
model was ported from a TensorFlow definition whose constructor argument is a *keep*
probability (`dropout_keep_prob=1.0`, meaning "no dropout"), and that value is passed straight to
torch.nn.Dropout, whose argument is the *drop* probability. With p=1.0 every feature entering the
classifier is zeroed during training, so only the classifier bias receives gradient and the
backbone never learns; training runs to the end without error or warning and the loss simply
stays at the class-prior level.

Source: https://github.com/hassony2/kinetics_i3d_pytorch/issues/6
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)

T, S, CLASSES = 8, 16, 4
DIRS = [(0, 1), (0, -1), (1, 0), (-1, 0)]


def make_batch(n):
    y = torch.randint(0, CLASSES, (n,))
    clips = 0.3 * torch.randn(n, 1, T, S, S)
    for i, c in enumerate(y.tolist()):
        dy, dx = DIRS[c]
        r0, c0 = [int(v) for v in torch.randint(5, 8, (2,))]
        for t in range(T):
            r, cc = r0 + dy * t, c0 + dx * t
            clips[i, 0, t, max(r - 1, 0) : r + 2, max(cc - 1, 0) : cc + 2] += 1.5
    return clips, y


class TinyI3D(nn.Module):
    def __init__(self, num_classes=CLASSES, dropout_keep_prob=1.0):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv3d(1, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool3d((1, 2, 2)),
            nn.Conv3d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool3d((2, 2, 2)),
        )
        self.dropout = nn.Dropout(dropout_keep_prob)  # BUG-LINE
        self.logits = nn.Linear(32 * 8, num_classes)

    def forward(self, x):
        return self.logits(self.dropout(self.features(x).flatten(1)))


model = TinyI3D()
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
for step in range(50):
    x, y = make_batch(16)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f}")

model.eval()
with torch.no_grad():
    x, y = make_batch(200)
    acc = (model(x).argmax(1) == y).float().mean().item()
print(f"final accuracy {acc:.3f}")

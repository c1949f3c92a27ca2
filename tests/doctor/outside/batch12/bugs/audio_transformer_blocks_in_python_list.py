"""Trains a small Transformer keyword classifier on synthetic log-mel-like spectrogram frames
(each of 6 "keywords" is a class-specific time-frequency pattern buried in noise). The encoder
blocks are kept in a plain Python list instead of nn.ModuleList, so they are invisible to
`model.parameters()`: the optimiser never sees them, `model.train()/eval()` never reach them, and
they stay at their random initialisation while only the input projection, the positional
embedding and the classifier head learn. The forward pass still runs through the blocks, the loss
falls somewhat, and no error or warning is produced.

Source: https://github.com/pytorch/pytorch/issues/59925
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)

N_MELS, FRAMES, D, CLASSES = 20, 24, 48, 6
TEMPLATES = torch.randn(CLASSES, FRAMES, N_MELS)


def make_batch(n):
    y = torch.randint(0, CLASSES, (n,))
    shift = torch.randint(-3, 4, (n,))
    x = torch.stack([torch.roll(TEMPLATES[c], int(s), dims=0) for c, s in zip(y.tolist(), shift.tolist())])
    return 0.6 * x + torch.randn(n, FRAMES, N_MELS), y


class KeywordTransformer(nn.Module):
    def __init__(self, depth=3):
        super().__init__()
        self.inp = nn.Linear(N_MELS, D)
        self.pos = nn.Parameter(torch.zeros(1, FRAMES, D))
        self.blocks = [  # BUG-LINE
            nn.TransformerEncoderLayer(D, 4, 96, dropout=0.1, batch_first=True) for _ in range(depth)
        ]
        self.norm = nn.LayerNorm(D)
        self.head = nn.Linear(D, CLASSES)

    def forward(self, x):
        h = self.inp(x) + self.pos
        for blk in self.blocks:
            h = blk(h)
        return self.head(self.norm(h).mean(1))


model = KeywordTransformer()
print("trainable parameters seen by the optimizer:", sum(p.numel() for p in model.parameters()))
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)

for step in range(50):
    x, y = make_batch(32)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step} loss {loss.item():.4f}")

model.eval()
with torch.no_grad():
    x, y = make_batch(200)
    acc = (model(x).argmax(1) == y).float().mean().item()
print(f"final accuracy {acc:.3f}")

"""CRNN frame-level sound-event tagger on synthetic log-spectrograms.

A Conv2d front-end produces feature maps of shape (batch, channels, time, freq); a GRU then
runs over time and a linear layer predicts, for every frame, whether a tone event is active.
Bug: the feature maps are flattened to (batch, time, channels*freq) with a single `.view`,
without moving the channel axis behind the time axis first. The element count matches, so the
view succeeds, but "frame" t of the GRU input is now a slab of one channel covering several
different time frames, and the per-frame predictions are no longer aligned with the per-frame
labels. The loss falls only slightly and frame accuracy stays low. Fix:
`x.permute(0, 2, 1, 3).reshape(B, T, C * F)`.

Source: https://github.com/vitrioil/Speech-Separation/issues/4
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

T, FREQ, C, H, BATCH = 24, 12, 6, 24, 16


def make_batch(n):
    spec = 0.3 * torch.randn(n, 1, T, FREQ)
    labels = torch.zeros(n, T)
    for i in range(n):
        for _ in range(2):
            start = torch.randint(0, T - 6, (1,)).item()
            dur = torch.randint(3, 8, (1,)).item()
            band = torch.randint(0, FREQ - 2, (1,)).item()
            spec[i, 0, start : start + dur, band : band + 2] += 2.0
            labels[i, start : start + dur] = 1.0
    return spec, labels


class CRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, C, 3, padding=1), nn.ReLU(), nn.Conv2d(C, C, 3, padding=1), nn.ReLU())
        self.gru = nn.GRU(C * FREQ, H, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * H, 1)

    def forward(self, spec):
        x = self.conv(spec)  # (B, C, T, F)
        B = x.shape[0]
        x = x.view(B, T, C * FREQ)  # BUG-LINE
        y, _ = self.gru(x)
        return self.out(y).squeeze(-1)  # (B, T) frame logits


model = CRNN()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for step in range(80):
    spec, labels = make_batch(BATCH)
    loss = F.binary_cross_entropy_with_logits(model(spec), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step:3d} loss {loss.item():.4f}")

with torch.no_grad():
    spec, labels = make_batch(64)
    acc = ((model(spec) > 0).float() == labels).float().mean().item()
print(f"held-out frame accuracy {acc:.3f} (all-inactive baseline {1 - labels.mean().item():.3f})")

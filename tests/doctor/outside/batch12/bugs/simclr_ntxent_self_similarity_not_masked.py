"""Self-supervised SimCLR-style pre-training of a small CNN encoder on synthetic images, with two
random views per image (noise, random shifts, random flips) and an NT-Xent (InfoNCE) loss. The
2N x 2N cosine-similarity matrix is turned into logits without masking the diagonal, so every
anchor's own self-similarity (always exactly 1/temperature, the largest possible logit) stays in
the softmax denominator as a fake "negative" that can never be pushed away. Each anchor's
probability for its true positive is therefore capped at 1/2, the loss is bounded below by log 2,
and as the views align the useful gradient is diluted by a constant term. The loss is finite and
decreases, nothing raises or warns, but the objective is not NT-Xent and the learned embedding is
worse than with the masked loss (compare the held-out masked loss printed at the end).

Source: https://github.com/Lightning-Universe/lightning-bolts/issues/695
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)

TEMP = 0.1
N = 32


def base_images(n):
    # each image is a random low-frequency pattern
    raw = torch.randn(n, 3, 4, 4)
    return F.interpolate(raw, size=(16, 16), mode="bilinear", align_corners=False)


def augment(x):
    shift = torch.randint(-2, 3, (2,)).tolist()
    x = torch.roll(x, shifts=shift, dims=(2, 3))
    flip = torch.rand(x.size(0)) < 0.5
    x = torch.where(flip[:, None, None, None], x.flip(-1), x)
    return x + 0.3 * torch.randn_like(x)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.proj = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32))

    def forward(self, x):
        return self.proj(self.net(x))


def nt_xent(z1, z2, temperature):
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    n = z1.size(0)
    sim = z @ z.t()
    logits = sim / temperature  # BUG-LINE
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
    return F.cross_entropy(logits, targets)


def positive_retrieval_acc(model, x):
    with torch.no_grad():
        z1 = F.normalize(model(augment(x)), dim=1)
        z2 = F.normalize(model(augment(x)), dim=1)
        return ((z1 @ z2.t()).argmax(1) == torch.arange(x.size(0))).float().mean().item()


model = Encoder()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(100):
    x = base_images(N)
    loss = nt_xent(model(augment(x)), model(augment(x)), TEMP)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0:
        print(f"step {step} loss {loss.item():.4f}")


def masked_ntxent_eval(model, x):
    with torch.no_grad():
        z = F.normalize(torch.cat([model(augment(x)), model(augment(x))]), dim=1)
        n = x.size(0)
        logits = (z @ z.t() / TEMP).masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf"))
        targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
        return F.cross_entropy(logits, targets).item()


torch.manual_seed(123)
print(f"held-out masked NT-Xent: {masked_ntxent_eval(model, base_images(128)):.4f}")
print(f"view retrieval top-1 over 128 images: {positive_retrieval_acc(model, base_images(128)):.3f}")

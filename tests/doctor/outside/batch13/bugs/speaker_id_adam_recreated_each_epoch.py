"""Speaker-identification classifier on MFCC-like frame features (1D conv + mean pooling).

Source: https://github.com/alan-turing-institute/deepsensor/issues/47

Bug: the Adam optimizer is constructed inside the epoch loop. Each epoch therefore starts with
fresh, zeroed first/second-moment estimates and a reset step counter: the momentum gathered so far
is thrown away and the bias-corrected first steps of every epoch are large, noisy sign-like
updates. Nothing errors and the loss still goes down, but training is slower and noisier than with
one optimizer kept for the whole run. Fix: create the optimizer once, before the epoch loop.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_SPK = 8
N_FEAT = 13


def make_utterances(n, gen):
    spk_means = torch.randn(N_SPK, N_FEAT, generator=torch.Generator().manual_seed(7)) * 0.6
    y = torch.randint(0, N_SPK, (n,), generator=gen)
    T = 40
    x = spk_means[y][:, :, None] + torch.randn(n, N_FEAT, T, generator=gen)
    # time-varying "content" shared across speakers
    x = x + torch.sin(torch.linspace(0, 12, T))[None, None, :] * torch.randn(n, N_FEAT, 1, generator=gen)
    return x, y


class SpeakerNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(N_FEAT, 32, 5, padding=2)
        self.conv2 = nn.Conv1d(32, 32, 3, padding=1)
        self.fc = nn.Linear(32, N_SPK)

    def forward(self, x):
        h = F.relu(self.conv2(F.relu(self.conv1(x))))
        return self.fc(h.mean(-1))


def main():
    gen = torch.Generator().manual_seed(0)
    x, y = make_utterances(320, gen)
    xv, yv = make_utterances(160, gen)
    model = SpeakerNet()
    bs = 32
    for epoch in range(8):
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)  # BUG-LINE
        perm = torch.randperm(len(y))
        tot = 0.0
        for i in range(0, len(y), bs):
            idx = perm[i : i + bs]
            loss = F.cross_entropy(model(x[idx]), y[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            tot += loss.item() * len(idx)
        with torch.no_grad():
            va = (model(xv).argmax(1) == yv).float().mean().item()
        print(f"epoch {epoch} train_loss {tot / len(y):.4f} val_acc {va:.3f}")


if __name__ == "__main__":
    main()

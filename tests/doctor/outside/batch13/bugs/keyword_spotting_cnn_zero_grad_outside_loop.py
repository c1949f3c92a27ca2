"""Keyword-spotting CNN on log-spectrogram features of synthetic tone "keywords".

Source: https://github.com/salesforce/corr_based_prediction/issues/1

Bug: `optimizer.zero_grad()` is called once, outside the training loop, instead of once per
step. Every `loss.backward()` therefore adds its gradient to the sum of all previous gradients, so
each update follows the accumulated history of the whole run rather than the current batch. The
run completes, the loss still goes down at first, but it then stalls/oscillates well above the
level reached by a correct loop. Fix: call `optimizer.zero_grad()` inside the loop, before
`loss.backward()`.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

SR = 4000
N_CLASSES = 6


def synth_keywords(n, gen):
    t = torch.arange(SR // 4) / SR  # 0.25 s clips
    y = torch.randint(0, N_CLASSES, (n,), generator=gen)
    base = 300.0 + 180.0 * y.float()
    sweep = torch.where(y % 2 == 0, 200.0, -150.0)
    phase = torch.rand(n, 1, generator=gen) * 6.28
    f_inst = base[:, None] + sweep[:, None] * t[None, :] / t[-1]
    wav = torch.sin(2 * torch.pi * torch.cumsum(f_inst, 1) / SR + phase)
    wav = wav + 0.8 * torch.randn(n, t.numel(), generator=gen)
    return wav, y


def log_spec(wav):
    spec = torch.stft(wav, n_fft=128, hop_length=32, window=torch.hann_window(128), return_complex=True)
    return torch.log1p(spec.abs()).unsqueeze(1)  # (B, 1, F, T)


class KWSNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16, N_CLASSES)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.relu(self.conv2(x))
        return self.fc(x.mean(dim=(2, 3)))


def main():
    gen = torch.Generator().manual_seed(0)
    wav, y = synth_keywords(320, gen)
    feats = log_spec(wav)
    feats = (feats - feats.mean()) / feats.std()
    model = KWSNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    bs = 32
    step = 0
    optimizer.zero_grad()  # BUG-LINE
    for epoch in range(5):
        perm = torch.randperm(len(y))
        for i in range(0, len(y), bs):
            idx = perm[i : i + bs]
            logits = model(feats[idx])
            loss = F.cross_entropy(logits, y[idx])
            loss.backward()
            optimizer.step()
            if step % 10 == 0:
                acc = (logits.argmax(1) == y[idx]).float().mean().item()
                print(f"step {step} loss {loss.item():.4f} acc {acc:.3f}")
            step += 1


if __name__ == "__main__":
    main()

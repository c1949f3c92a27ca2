"""Trains a tiny CTC acoustic model (2-layer strided Conv2d subsampling by 4, then a 1-D convolution
and a linear layer over 6 symbols + blank) on synthetic filterbank sequences in which each "phone" of
the transcript is a class-specific spectral pattern lasting several frames. The subsampling
module returns correct output lengths, but its caller then applies the old length formula a
second time (`(lengths >> 2) - 1`), so CTCLoss is told that only the first quarter of the valid
encoder frames exist. The loss stays finite (the shortened lengths are still long enough for the
2-symbol targets), nothing is raised or warned, but the model is trained to emit the whole
transcript within the first few frames, and greedy decoding over the real frames is wrong.

Source: https://github.com/openspeech-team/openspeech/issues/76
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)

MELS, SYMS = 24, 6  # symbols 1..6, blank = 0
PHONES = torch.randn(SYMS + 1, MELS)


def make_batch(n):
    feats, labels, in_lens = [], [], []
    T = 64
    x = 0.5 * torch.randn(n, T, MELS)
    for i in range(n):
        tgt = torch.randperm(SYMS)[:2] + 1
        seg = int(torch.randint(24, 33, (1,)))  # frames per phone
        for k, s in enumerate(tgt.tolist()):
            x[i, k * seg : (k + 1) * seg] += PHONES[s]
        in_lens.append(2 * seg)
        labels.append(tgt)
    return x, torch.stack(labels), torch.tensor(in_lens)


class Conv2dSubsampling(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, 8, 3, stride=2, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.ReLU()
        )
        self.proj = nn.Linear(8 * ((MELS + 3) // 4), d)

    def forward(self, x, lengths):
        h = self.conv(x.unsqueeze(1))  # (B, 8, T/4, F/4)
        h = self.proj(h.permute(0, 2, 1, 3).flatten(2))
        out_lens = (lengths - 1) // 2 + 1
        out_lens = (out_lens - 1) // 2 + 1
        return h, out_lens


class CTCModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.sub = Conv2dSubsampling()
        self.ctx = nn.Sequential(nn.Conv1d(64, 128, 3, padding=1), nn.ReLU())
        self.out = nn.Linear(128, SYMS + 1)

    def forward(self, x, lengths):
        h, out_lens = self.sub(x, lengths)
        out_lens = (out_lens >> 2) - 1  # BUG-LINE
        h = self.ctx(h.transpose(1, 2)).transpose(1, 2)
        return self.out(h).log_softmax(-1), out_lens


def greedy_ok(logp, lens, labels):
    ok = 0
    for b in range(logp.size(0)):
        path = logp[b, : int(lens[b])].argmax(-1).tolist()
        hyp, prev = [], 0
        for p in path:
            if p != prev and p != 0:
                hyp.append(p)
            prev = p
        ok += int(hyp == labels[b].tolist())
    return ok / logp.size(0)


model = CTCModel()
ctc = nn.CTCLoss(blank=0, zero_infinity=True)
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
for step in range(150):
    x, labels, in_lens = make_batch(32)
    logp, out_lens = model(x, in_lens)
    loss = ctc(logp.transpose(0, 1), labels, out_lens, torch.full((32,), 2))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 30 == 0:
        print(f"step {step} ctc loss {loss.item():.4f}  mean encoder length given to CTC {out_lens.float().mean():.1f}")

with torch.no_grad():
    x, labels, in_lens = make_batch(100)
    logp, _ = model(x, in_lens)
    true_lens = (((in_lens - 1) // 2 + 1) - 1) // 2 + 1
    print(f"greedy transcript accuracy over valid frames: {greedy_ok(logp, true_lens, labels):.3f}")

"""Small conv + GRU acoustic model trained with CTC on synthetic filterbank frames.

Bug: the network's per-frame class scores are handed to nn.CTCLoss as raw
logits; the log_softmax over the vocabulary was left out. CTCLoss assumes its
input already holds log-probabilities, so the objective is not a likelihood any
more (it can go negative and is lowered by simply inflating all logits). The run
completes and the printed loss keeps falling, but decoding is poor. Reported in
a course solution where the log_softmax line had been commented out.

Source: https://github.com/jeremyfix/deeplearning-lectures/issues/22
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB = 6  # 0 = blank, 1..5 = symbols
N_MELS = 20
PROTOS = torch.randn(VOCAB, N_MELS) * 2.0


def make_batch(bs=16):
    feats, targets, tlens = [], [], []
    for _ in range(bs):
        n = int(torch.randint(2, 5, (1,)))
        labels = torch.randint(1, VOCAB, (n,))
        frames = []
        for lab in labels:
            frames += [PROTOS[lab]] * int(torch.randint(3, 6, (1,)))
            frames += [PROTOS[0]] * 2
        x = torch.stack(frames)
        x = F.pad(x, (0, 0, 0, 40 - x.shape[0]))
        feats.append(x + 0.3 * torch.randn_like(x))
        targets.append(labels)
        tlens.append(n)
    x = torch.stack(feats).transpose(1, 2)  # (B, mels, T)
    return x, torch.cat(targets), torch.tensor(tlens)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(N_MELS, 32, 5, padding=2), nn.ReLU(), nn.Conv1d(32, 32, 5, padding=2), nn.ReLU()
        )
        self.out = nn.Linear(32, VOCAB)

    def forward(self, x):
        h = self.conv(x).transpose(1, 2)  # (B, T, 32)
        return self.out(h)  # (B, T, V)


POOL = [make_batch() for _ in range(8)]
model = Encoder()
ctc = nn.CTCLoss(blank=0, zero_infinity=True)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for step in range(60):
    x, targets, tlens = POOL[step % len(POOL)]
    logits = model(x)
    log_probs = logits.transpose(0, 1)  # BUG-LINE
    in_lens = torch.full((x.shape[0],), logits.shape[1], dtype=torch.long)
    loss = ctc(log_probs, targets, in_lens, tlens)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 15 == 0 or step == 59:
        print(f"step {step:3d} ctc {loss.item():.4f}")

with torch.no_grad():
    x, targets, tlens = make_batch(8)
    best = model(x).argmax(-1)[0].tolist()
    hyp = [c for i, c in enumerate(best) if c != 0 and (i == 0 or c != best[i - 1])]
    print("ref", targets[: tlens[0]].tolist(), "hyp", hyp)

"""A small bidirectional-GRU acoustic model trained with CTC on synthetic "utterances": each label
symbol (1..6) is rendered as a few frames of a symbol-specific feature pattern with random durations
and optional silence frames, so input lengths, target lengths and alignments vary. The network
output is converted to log-probabilities over the class axis and transposed to the (T, N, C) layout
CTCLoss expects; blank is index 0, true per-utterance input and target lengths are passed, padded
frames are never scored, and zero_infinity guards against impossible alignments. Greedy decoding
(collapse repeats, drop blanks) is used to report the error.

Source: https://arxiv.org/abs/1512.02595
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

torch.manual_seed(0)
NSYM, FEAT = 7, 12
patterns = torch.randn(NSYM, FEAT)


def make_batch(n):
    feats, targets, in_lens, tg_lens = [], [], [], []
    for _ in range(n):
        L = int(torch.randint(2, 6, (1,)))
        tgt = torch.randint(1, NSYM, (L,))
        frames = []
        for s in tgt.tolist():
            frames.append(patterns[s].repeat(int(torch.randint(2, 5, (1,))), 1))
            if torch.rand(1) < 0.5:
                frames.append(torch.zeros(1, FEAT))
        f = torch.cat(frames) + 0.3 * torch.randn(sum(x.size(0) for x in frames), FEAT)
        feats.append(f)
        targets.append(tgt)
        in_lens.append(f.size(0))
        tg_lens.append(L)
    return pad_sequence(feats, batch_first=True), torch.cat(targets), torch.tensor(in_lens), torch.tensor(tg_lens)


class AM(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(FEAT, 64, batch_first=True, bidirectional=True)
        self.out = nn.Linear(128, NSYM)

    def forward(self, x):
        return self.out(self.rnn(x)[0])


model = AM()
ctc = nn.CTCLoss(blank=0, zero_infinity=True)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for step in range(70):
    x, y, il, tl = make_batch(24)
    log_probs = F.log_softmax(model(x), dim=-1).transpose(0, 1)
    loss = ctc(log_probs, y, il, tl)
    opt.zero_grad()
    loss.backward()
    opt.step()
x, y, il, tl = make_batch(64)
with torch.no_grad():
    best = model(x).argmax(-1)
refs = y.split(tl.tolist())
correct = 0
for b in range(64):
    seq = best[b, : il[b]].tolist()
    hyp = [s for j, s in enumerate(seq) if s != 0 and (j == 0 or s != seq[j - 1])]
    correct += int(hyp == refs[b].tolist())
print("final ctc loss", round(loss.item(), 4), "exact sequence accuracy", round(correct / 64, 3))

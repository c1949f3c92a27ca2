"""BiGRU + CTC phoneme recogniser on synthetic filterbank frames.

Source: https://github.com/Holmeyoung/crnn-pytorch/issues/34

Bug: `nn.CTCLoss` uses index 0 as the blank, but the label encoder maps the symbol inventory to
indices starting at 0 (no +1 shift). The first phoneme ('a') is therefore encoded as the blank:
every occurrence of it in a target is silently treated as "no symbol", so the model is never
taught to emit it and learns to output blanks where it occurs. The CTC loss still decreases and no
error is raised. Fix: encode symbols as `i + 1` (reserve 0 for the blank) and decode with `- 1`.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

PHONES = list("aeiourstn")
N_MELS = 20
FRAMES_PER_PHONE = 3
char2idx = {c: i for i, c in enumerate(PHONES)}  # BUG-LINE
N_OUT = len(PHONES) + 1  # symbols + blank


TEMPLATES = torch.randn(len(PHONES), N_MELS, generator=torch.Generator().manual_seed(123))


def synth_batch(bs, gen):
    # each phone has a characteristic spectral template; utterances are 3-6 phones with repeats
    lens = torch.randint(3, 7, (bs,), generator=gen)
    T = int(lens.max()) * FRAMES_PER_PHONE
    x = torch.zeros(bs, T, N_MELS)
    targets, tlens, in_lens = [], [], []
    for b in range(bs):
        seq = [PHONES[j] for j in torch.randint(0, len(PHONES), (int(lens[b]),), generator=gen).tolist()]
        for k, ph in enumerate(seq):
            x[b, k * FRAMES_PER_PHONE : (k + 1) * FRAMES_PER_PHONE] = TEMPLATES[PHONES.index(ph)]
        targets += [char2idx[c] for c in seq]
        tlens.append(len(seq))
        in_lens.append(len(seq) * FRAMES_PER_PHONE)
    x = x + 0.3 * torch.randn(x.shape, generator=gen)
    return x, torch.tensor(targets), torch.tensor(in_lens), torch.tensor(tlens)


class CTCModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(N_MELS, 32, batch_first=True, bidirectional=True)
        self.out = nn.Linear(64, N_OUT)

    def forward(self, x):
        h, _ = self.rnn(x)
        return self.out(h)


def main():
    gen = torch.Generator().manual_seed(0)
    model = CTCModel()
    ctc = nn.CTCLoss(blank=0, zero_infinity=True)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(60):
        x, tg, il, tl = synth_batch(12, gen)
        logp = F.log_softmax(model(x), dim=-1).transpose(0, 1)  # (T, B, C)
        loss = ctc(logp, tg, il, tl)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"step {step} ctc_loss {loss.item():.4f}")


if __name__ == "__main__":
    main()

"""Conv-subsampling + BiGRU acoustic model trained with CTC on synthetic filterbank utterances.

Source: https://github.com/SeanNaren/deepspeech.pytorch/pull/603

Clean program. Unusual details that are all done correctly: the blank index is passed to
`nn.CTCLoss` explicitly (blank=0) and the symbol inventory is encoded from 1; the front-end
convolution subsamples time by 2, and the `input_lengths` given to CTC are recomputed from the
convolution arithmetic for every utterance (not the raw frame counts); padded frames of shorter
utterances are therefore never scored; targets are passed as one concatenated 1-D tensor with
per-utterance target lengths.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

SYMS = list("abcdefg")
BLANK = 0
enc = {c: i + 1 for i, c in enumerate(SYMS)}
N_MELS = 16
FPS = 6  # frames per symbol
TEMPLATES = torch.randn(len(SYMS), N_MELS, generator=torch.Generator().manual_seed(3))


def synth_batch(bs, gen):
    lens = torch.randint(2, 6, (bs,), generator=gen)
    T = int(lens.max()) * FPS
    x = torch.zeros(bs, T, N_MELS)
    tg, tl, fl = [], [], []
    for b in range(bs):
        seq = torch.randint(0, len(SYMS), (int(lens[b]),), generator=gen).tolist()
        for k, s in enumerate(seq):
            x[b, k * FPS : (k + 1) * FPS] = TEMPLATES[s]
        tg += [enc[SYMS[s]] for s in seq]
        tl.append(len(seq))
        fl.append(len(seq) * FPS)
    x = x + 0.3 * torch.randn(x.shape, generator=gen)
    return x, torch.tensor(tg), torch.tensor(fl), torch.tensor(tl)


class ConvGRUCTC(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(N_MELS, 32, kernel_size=3, stride=2, padding=1)
        self.rnn = nn.GRU(32, 32, batch_first=True, bidirectional=True)
        self.out = nn.Linear(64, len(SYMS) + 1)

    @staticmethod
    def out_lengths(frame_lens):
        return (frame_lens + 2 * 1 - 3) // 2 + 1

    def forward(self, x):
        h = F.relu(self.conv(x.transpose(1, 2))).transpose(1, 2)
        h, _ = self.rnn(h)
        return self.out(h)


def main():
    gen = torch.Generator().manual_seed(0)
    model = ConvGRUCTC()
    ctc = nn.CTCLoss(blank=BLANK, zero_infinity=True)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(60):
        x, tg, fl, tl = synth_batch(12, gen)
        logp = model(x).log_softmax(-1).transpose(0, 1)
        in_lens = ConvGRUCTC.out_lengths(fl)
        loss = ctc(logp, tg, in_lens, tl)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"step {step} ctc {loss.item():.4f}")


if __name__ == "__main__":
    main()

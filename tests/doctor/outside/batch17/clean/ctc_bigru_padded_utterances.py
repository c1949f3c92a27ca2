"""CTC acoustic model (strided conv front-end + BiGRU) on synthetic variable-length utterances.

Unusual on purpose: the recurrent encoder is bidirectional (each output frame sees the whole
utterance, which is correct for offline CTC). Utterances are zero-padded to the batch maximum,
and the true per-utterance frame counts, recomputed after the stride-2 convolution, are passed as
input_lengths so that padded frames never enter the CTC alignment; padded target positions are
excluded via target_lengths. The network output goes through log_softmax over the class dim and is
transposed from (N, T, C) to (T, N, C) as CTCLoss expects; index 0 is reserved for the blank.
Greedy decoding collapses repeats and removes blanks to report a token error proxy. Modelled on
the CTC usage guide that lists the (T, N, C) layout, log-probabilities and length checks.

Source: https://runebook.dev/en/docs/pytorch/generated/torch.nn.functional.ctc_loss
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

torch.manual_seed(0)
torch.set_num_threads(2)

N_TOK, FEAT = 6, 16  # tokens 1..6, blank = 0
PROTO = torch.randn(N_TOK + 1, FEAT) * 1.5


def synth_batch(bs=16):
    feats, targets, in_lens, tgt_lens = [], [], [], []
    for _ in range(bs):
        L = torch.randint(3, 7, (1,)).item()
        toks = torch.randint(1, N_TOK + 1, (L,))
        frames = []
        for t in toks.tolist():
            d = torch.randint(4, 8, (1,)).item()
            frames.append(PROTO[t] + 0.6 * torch.randn(d, FEAT))
            frames.append(0.6 * torch.randn(2, FEAT))
        f = torch.cat(frames)
        feats.append(f)
        targets.append(toks)
        in_lens.append(len(f))
        tgt_lens.append(L)
    x = nn.utils.rnn.pad_sequence(feats, batch_first=True)
    y = nn.utils.rnn.pad_sequence(targets, batch_first=True)
    return x, y, torch.tensor(in_lens), torch.tensor(tgt_lens)


class CTCModel(nn.Module):
    def __init__(self, hid=32):
        super().__init__()
        self.conv = nn.Conv1d(FEAT, hid, 3, stride=2, padding=1)
        self.rnn = nn.GRU(hid, hid, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hid, N_TOK + 1)

    def forward(self, x, lens):
        h = F.relu(self.conv(x.transpose(1, 2))).transpose(1, 2)
        out_lens = (lens + 2 * 1 - 3) // 2 + 1
        packed = pack_padded_sequence(h, out_lens, batch_first=True, enforce_sorted=False)
        o, _ = self.rnn(packed)
        o, _ = pad_packed_sequence(o, batch_first=True, total_length=h.shape[1])
        return F.log_softmax(self.out(o), dim=-1), out_lens


def greedy(logp, lens):
    outs = []
    for seq, n in zip(logp.argmax(-1), lens.tolist()):
        prev, res = 0, []
        for s in seq[:n].tolist():
            if s != prev and s != 0:
                res.append(s)
            prev = s
        outs.append(res)
    return outs


def main():
    model = CTCModel()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    ctc = nn.CTCLoss(blank=0, zero_infinity=True)
    for step in range(110):
        x, y, in_lens, tgt_lens = synth_batch()
        logp, out_lens = model(x, in_lens)
        loss = ctc(logp.transpose(0, 1), y, out_lens, tgt_lens)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        if step % 25 == 0 or step == 109:
            hyp = greedy(logp.detach(), out_lens)
            exact = sum(h == t[:n].tolist() for h, t, n in zip(hyp, y, tgt_lens.tolist())) / len(hyp)
            print(f"step {step:3d} ctc {loss.item():.4f} exact_match {exact:.2f}")


if __name__ == "__main__":
    main()

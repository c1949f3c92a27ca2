"""GRU encoder-decoder (sequence reversal "translation") with packed padded source sequences.

Source: https://github.com/bentrevett/pytorch-seq2seq/issues/64

Clean program. Both padding mechanisms discussed in the thread are used, each for its own job:
the encoder runs on `pack_padded_sequence(..., enforce_sorted=False)` so the final hidden state
comes from the last real token of each (unsorted) source sentence, and the decoder loss uses
`ignore_index=PAD` so padded target positions are not scored. Teacher forcing with a target
shifted by one; gradient clipping.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, BOS, EOS = 0, 1, 2
V = 20
MAXL = 8


def make_batch(bs, gen):
    lens = torch.randint(3, MAXL + 1, (bs,), generator=gen)
    src = torch.full((bs, MAXL), PAD, dtype=torch.long)
    tgt = torch.full((bs, MAXL + 2), PAD, dtype=torch.long)
    for b in range(bs):
        L = int(lens[b])
        s = torch.randint(3, V, (L,), generator=gen)
        src[b, :L] = s
        tgt[b, 0] = BOS
        tgt[b, 1 : L + 1] = s.flip(0)
        tgt[b, L + 1] = EOS
    return src, lens, tgt


class Seq2Seq(nn.Module):
    def __init__(self, d=48):
        super().__init__()
        self.emb_s = nn.Embedding(V, d, padding_idx=PAD)
        self.emb_t = nn.Embedding(V, d, padding_idx=PAD)
        self.enc = nn.GRU(d, d, batch_first=True)
        self.dec = nn.GRU(d, d, batch_first=True)
        self.out = nn.Linear(d, V)

    def forward(self, src, lens, tgt_in):
        packed = pack_padded_sequence(self.emb_s(src), lens, batch_first=True, enforce_sorted=False)
        _, h = self.enc(packed)
        o, _ = self.dec(self.emb_t(tgt_in), h)
        return self.out(o)


def main():
    gen = torch.Generator().manual_seed(0)
    model = Seq2Seq()
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    for step in range(80):
        src, lens, tgt = make_batch(16, gen)
        logits = model(src, lens, tgt[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, V), tgt[:, 1:].reshape(-1), ignore_index=PAD)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 20 == 0:
            mask = tgt[:, 1:] != PAD
            acc = (logits.argmax(-1)[mask] == tgt[:, 1:][mask]).float().mean().item()
            print(f"step {step} loss {loss.item():.4f} token_acc {acc:.3f}")


if __name__ == "__main__":
    main()

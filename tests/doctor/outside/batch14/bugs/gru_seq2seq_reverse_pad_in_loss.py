"""GRU encoder-decoder trained to reverse variable-length token sequences (toy translation).

Targets are right-padded with PAD to the longest sequence in the batch. Bug: the criterion is a
plain `nn.CrossEntropyLoss()`, so every padded target position is scored too. Most target
positions in a batch are padding, which the decoder learns to emit almost immediately; the
averaged loss therefore looks low and keeps falling while the loss on the real tokens (what
matters) is diluted and learns more slowly. The fix is `ignore_index=PAD` (or masking the
per-token loss).

Source: https://github.com/pytorch/tutorials/issues/3643
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, BOS, EOS = 0, 1, 2
VOCAB, MAXLEN, H, BATCH = 14, 10, 48, 32


def make_batch(n):
    lengths = torch.randint(2, MAXLEN + 1, (n,))
    src = torch.full((n, MAXLEN), PAD)
    tgt = torch.full((n, MAXLEN + 2), PAD)
    for i, L in enumerate(lengths.tolist()):
        seq = torch.randint(3, VOCAB, (L,))
        src[i, :L] = seq
        tgt[i, 0] = BOS
        tgt[i, 1 : L + 1] = seq.flip(0)
        tgt[i, L + 1] = EOS
    return src, tgt


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.src_emb = nn.Embedding(VOCAB, H, padding_idx=PAD)
        self.tgt_emb = nn.Embedding(VOCAB, H, padding_idx=PAD)
        self.encoder = nn.GRU(H, H, batch_first=True)
        self.decoder = nn.GRU(H, H, batch_first=True)
        self.out = nn.Linear(H, VOCAB)

    def forward(self, src, tgt_in):
        _, h = self.encoder(self.src_emb(src))
        dec, _ = self.decoder(self.tgt_emb(tgt_in), h)
        return self.out(dec)


model = Seq2Seq()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
criterion = nn.CrossEntropyLoss()  # BUG-LINE

for step in range(120):
    src, tgt = make_batch(BATCH)
    logits = model(src, tgt[:, :-1])
    gold = tgt[:, 1:]
    loss = criterion(logits.reshape(-1, VOCAB), gold.reshape(-1))
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if step % 30 == 0:
        print(f"step {step:3d} loss {loss.item():.4f}")

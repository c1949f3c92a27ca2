"""Small nn.Transformer encoder-decoder on a toy translation task with a hand-written
label-smoothed loss.

Unusual but correct: instead of the built-in criterion, the loss is written out by hand as
(1 - eps) * NLL + eps * mean over the vocabulary of -log p, computed per target token with
reduction done manually: padded target positions are masked out and the sum is divided by the
number of real (non-pad) tokens, not by batch*length. The script checks on the first batch that
this equals F.cross_entropy(..., ignore_index=PAD, label_smoothing=eps). All four masks are
passed to nn.Transformer (causal tgt_mask plus src/tgt/memory key-padding masks, True = pad).

Source: https://github.com/eladhoffer/utils.pytorch/issues/4
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, BOS, EOS = 0, 1, 2
VOCAB, MAXLEN, D, BATCH, EPS = 14, 8, 32, 32, 0.1


def make_batch(n):
    lengths = torch.randint(2, MAXLEN + 1, (n,))
    src = torch.full((n, MAXLEN), PAD)
    tgt = torch.full((n, MAXLEN + 2), PAD)
    for i, L in enumerate(lengths.tolist()):
        seq = torch.randint(3, VOCAB, (L,))
        src[i, :L] = seq
        tgt[i, 0] = BOS
        tgt[i, 1 : L + 1] = (seq - 3 + 1) % (VOCAB - 3) + 3  # "translate": shift every word id
        tgt[i, L + 1] = EOS
    return src, tgt


class ToyTranslator(nn.Module):
    def __init__(self):
        super().__init__()
        self.src_emb = nn.Embedding(VOCAB, D, padding_idx=PAD)
        self.tgt_emb = nn.Embedding(VOCAB, D, padding_idx=PAD)
        self.pos = nn.Embedding(MAXLEN + 2, D)
        enc_layer = nn.TransformerEncoderLayer(D, 4, 64, dropout=0.0, batch_first=True)
        encoder = nn.TransformerEncoder(enc_layer, 1, norm=nn.LayerNorm(D), enable_nested_tensor=False)
        self.tf = nn.Transformer(
            D, nhead=4, num_decoder_layers=1, dim_feedforward=64, dropout=0.0, batch_first=True, custom_encoder=encoder
        )
        self.out = nn.Linear(D, VOCAB)

    def forward(self, src, tgt_in):
        S, T = src.shape[1], tgt_in.shape[1]
        s = self.src_emb(src) + self.pos(torch.arange(S))
        t = self.tgt_emb(tgt_in) + self.pos(torch.arange(T))
        src_pad, tgt_pad = src == PAD, tgt_in == PAD
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        h = self.tf(
            s,
            t,
            tgt_mask=causal,
            src_key_padding_mask=src_pad,
            tgt_key_padding_mask=tgt_pad,
            memory_key_padding_mask=src_pad,
            tgt_is_causal=True,
        )
        return self.out(h)


def smoothed_loss(logits, gold, eps):
    logp = logits.log_softmax(-1)
    nll = -logp.gather(-1, gold.unsqueeze(-1)).squeeze(-1)
    uniform = -logp.mean(-1)
    per_tok = (1 - eps) * nll + eps * uniform
    mask = (gold != PAD).float()
    return (per_tok * mask).sum() / mask.sum()


model = ToyTranslator()
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
for step in range(150):
    src, tgt = make_batch(BATCH)
    logits = model(src, tgt[:, :-1])
    gold = tgt[:, 1:]
    loss = smoothed_loss(logits, gold, EPS)
    if step == 0:
        ref = F.cross_entropy(logits.reshape(-1, VOCAB), gold.reshape(-1), ignore_index=PAD, label_smoothing=EPS)
        print(f"hand-written {loss.item():.5f} vs built-in {ref.item():.5f}")
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 30 == 0:
        print(f"step {step:3d} loss {loss.item():.4f}")

model.eval()
with torch.no_grad():
    src, tgt = make_batch(256)
    pred = model(src, tgt[:, :-1]).argmax(-1)
    real = tgt[:, 1:] != PAD
    print(f"teacher-forced token accuracy {(pred[real] == tgt[:, 1:][real]).float().mean().item():.3f}")

"""Decoder-only transformer LM over right-padded variable-length sentences, with the attention
mask built by hand.

Unusual but correct: the boolean "may attend" mask is the AND of a key-padding mask shaped
(B, 1, 1, T) - broadcast over heads and over query rows - and a lower-triangular causal mask
shaped (1, 1, T, T). Disallowed scores are filled with -inf before the softmax. Because padding
is on the right and every sequence starts with BOS, every query row (including rows that belong
to padding) keeps at least key 0, so no row is fully masked and no NaN appears. Padded target
positions are excluded from the loss with ignore_index.

Source: https://github.com/hyunwoongko/transformer/pull/40
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, BOS = 0, 1
VOCAB, MAXLEN, D, HEADS, BATCH = 16, 16, 48, 4, 32


def make_batch(n):
    lengths = torch.randint(4, MAXLEN + 1, (n,))
    x = torch.full((n, MAXLEN + 1), PAD)
    for i, L in enumerate(lengths.tolist()):
        a = torch.randint(2, VOCAB, (1,)).item()
        step = torch.randint(1, 3, (1,)).item()
        x[i, 0] = BOS
        x[i, 1 : L + 1] = (a - 2 + step * torch.arange(L)) % (VOCAB - 2) + 2
    return x[:, :-1], x[:, 1:]


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(D, 3 * D)
        self.o = nn.Linear(D, D)
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.ff = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))

    def forward(self, x, allowed):
        B, T, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).chunk(3, -1)
        q, k, v = (t.view(B, T, HEADS, D // HEADS).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / (D // HEADS) ** 0.5  # (B, H, T, T)
        scores = scores.masked_fill(~allowed, float("-inf"))
        att = scores.softmax(dim=-1) @ v
        x = x + self.o(att.transpose(1, 2).reshape(B, T, D))
        return x + self.ff(self.ln2(x))


class DecoderLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D, padding_idx=PAD)
        self.pos = nn.Embedding(MAXLEN, D)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.ln = nn.LayerNorm(D)
        self.head = nn.Linear(D, VOCAB)

    def forward(self, idx):
        B, T = idx.shape
        key_ok = (idx != PAD)[:, None, None, :]  # (B, 1, 1, T)
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool))[None, None]  # (1, 1, T, T)
        allowed = key_ok & causal
        h = self.tok(idx) + self.pos(torch.arange(T))
        for blk in self.blocks:
            h = blk(h, allowed)
        return self.head(self.ln(h))


model = DecoderLM()
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
for step in range(150):
    x, y = make_batch(BATCH)
    logits = model(x)
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1), ignore_index=PAD)
    assert torch.isfinite(loss)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 30 == 0:
        print(f"step {step:3d} loss {loss.item():.4f}")
print(f"final loss {loss.item():.4f}")

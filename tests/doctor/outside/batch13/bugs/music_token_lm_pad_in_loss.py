"""Small Transformer language model over symbolic-music event tokens, trained on padded batches.

Source: https://github.com/EleutherAI/aria/pull/40

Bug: sequences of different lengths are right-padded with PAD (id 0), but the loss is a plain
`nn.CrossEntropyLoss()` without `ignore_index=PAD`. Every padded position contributes a "predict
PAD after PAD" target. Since most of each short sequence is padding, a large part of the loss and
gradient is spent on trivially predicting padding; the reported loss looks low and keeps
falling while the model learns the real token transitions more slowly. Fix:
`nn.CrossEntropyLoss(ignore_index=PAD)` (or mask the loss with the attention mask).
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, BOS = 0, 1
VOCAB = 40
MAX_LEN = 32


def synth_sequences(n, gen):
    # "melodies": arithmetic pitch walks with a per-sequence step, variable length
    seqs = []
    for _ in range(n):
        L = int(torch.randint(6, MAX_LEN, (1,), generator=gen))
        start = int(torch.randint(2, VOCAB, (1,), generator=gen))
        stepv = int(torch.randint(1, 4, (1,), generator=gen))
        s = [BOS] + [2 + (start + stepv * k) % (VOCAB - 2) for k in range(L - 1)]
        seqs.append(torch.tensor(s))
    out = torch.full((n, MAX_LEN), PAD, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = s
    return out


class TinyLM(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d)
        self.pos = nn.Embedding(MAX_LEN, d)
        layer = nn.TransformerEncoderLayer(d, 2, 64, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(d, VOCAB)

    def forward(self, x):
        T = x.size(1)
        mask = nn.Transformer.generate_square_subsequent_mask(T)
        h = self.emb(x) + self.pos(torch.arange(T))[None]
        return self.head(self.enc(h, mask=mask, is_causal=True))


def main():
    gen = torch.Generator().manual_seed(0)
    data = synth_sequences(512, gen)
    model = TinyLM()
    criterion = nn.CrossEntropyLoss()  # BUG-LINE
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    bs = 16
    for step in range(60):
        idx = torch.randint(0, len(data), (bs,), generator=gen)
        batch = data[idx]
        inp, tgt = batch[:, :-1], batch[:, 1:]
        logits = model(inp)
        loss = criterion(logits.reshape(-1, VOCAB), tgt.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            real = tgt != PAD
            with torch.no_grad():
                acc = (logits.argmax(-1)[real] == tgt[real]).float().mean().item()
            print(f"step {step} loss {loss.item():.4f} real_token_acc {acc:.3f}")


if __name__ == "__main__":
    main()

"""GRU language model on variable-length padded sentences, trained with gradient accumulation
that is normalized by the number of real target tokens in the whole accumulation window.

Unusual but correct: each optimizer step consumes ACCUM micro-batches whose numbers of
non-pad target tokens differ. Instead of averaging per-micro-batch mean losses (which
overweights short micro-batches), the script first counts the real tokens of the whole window,
then backpropagates `sum_loss / window_tokens` for each micro-batch (reduction='sum',
ignore_index=PAD). The accumulated gradient is therefore exactly the gradient of the token-mean
loss over the full window; this is checked once against a single full-batch backward.

Source: https://github.com/meta-pytorch/torchtune/pull/1875
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, VOCAB, MAXLEN, E, H, MICRO, ACCUM = 0, 20, 24, 32, 64, 8, 4


def make_micro_batch(n):
    max_len = torch.randint(4, MAXLEN + 1, (1,)).item()  # micro-batches differ in length
    lengths = torch.randint(2, max_len + 1, (n,))
    x = torch.full((n, max_len + 1), PAD)
    for i, L in enumerate(lengths.tolist()):
        start = torch.randint(1, VOCAB, (1,)).item()
        x[i, : L + 1] = (start + torch.arange(L + 1) * 3) % (VOCAB - 1) + 1  # arithmetic "sentences"
    return x[:, :-1], x[:, 1:]


class GRULM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, E, padding_idx=PAD)
        self.gru = nn.GRU(E, H, batch_first=True)
        self.out = nn.Linear(H, VOCAB)

    def forward(self, x):
        h, _ = self.gru(self.emb(x))
        return self.out(h)


def sum_loss(model, x, y):
    logits = model(x)
    return F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1), ignore_index=PAD, reduction="sum")


model = GRULM()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)

for step in range(60):
    window = [make_micro_batch(MICRO) for _ in range(ACCUM)]
    n_tokens = sum(int((y != PAD).sum()) for _, y in window)
    opt.zero_grad()
    total = 0.0
    for x, y in window:
        loss = sum_loss(model, x, y) / n_tokens
        loss.backward()
        total += loss.item()
    if step == 0:
        accumulated = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        full = sum(sum_loss(model, x, y) for x, y in window) / n_tokens
        full.backward()
        diff = max((a - p.grad).abs().max().item() for a, p in zip(accumulated, model.parameters()))
        print(f"max |grad(accumulated) - grad(full window)| = {diff:.2e}")
    opt.step()
    if step % 10 == 0:
        print(f"step {step:3d} token-mean loss {total:.4f} ({n_tokens} tokens)")

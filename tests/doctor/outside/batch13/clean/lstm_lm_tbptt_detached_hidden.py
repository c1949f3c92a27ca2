"""Character-level LSTM language model trained with truncated backpropagation through time (TBPTT).

Source: https://github.com/yunjey/pytorch-tutorial/issues/90

Clean program. Unusual but correct: the corpus is treated as one long stream split into
`batch_size` parallel tracks; the hidden state is carried from one chunk to the next (so the model
keeps long context) but is detached at every chunk boundary, so gradients only flow through the
last `bptt` steps - exactly what the `states = detach(states)` line in the linked thread does.
The hidden state is re-initialised at the start of every epoch, and gradients are clipped by norm
before each optimizer step.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

TEXT = "the quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat. " * 40
chars = sorted(set(TEXT))
stoi = {c: i for i, c in enumerate(chars)}
V = len(chars)


def batchify(ids, bsz):
    n = ids.size(0) // bsz
    return ids[: n * bsz].view(bsz, n)  # (B, N) parallel streams


class CharLSTM(nn.Module):
    def __init__(self, d=48):
        super().__init__()
        self.emb = nn.Embedding(V, d)
        self.lstm = nn.LSTM(d, d, batch_first=True)
        self.out = nn.Linear(d, V)

    def forward(self, x, state):
        h, state = self.lstm(self.emb(x), state)
        return self.out(h), state

    def init_state(self, bsz):
        z = torch.zeros(1, bsz, self.lstm.hidden_size)
        return (z, z.clone())


def main():
    ids = torch.tensor([stoi[c] for c in TEXT])
    data = batchify(ids, 8)
    model = CharLSTM()
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    bptt = 20
    for epoch in range(3):
        state = model.init_state(data.size(0))
        tot, nb = 0.0, 0
        for i in range(0, data.size(1) - 1 - bptt, bptt):
            x = data[:, i : i + bptt]
            y = data[:, i + 1 : i + 1 + bptt]
            state = tuple(s.detach() for s in state)
            logits, state = model(x, state)
            loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            tot += loss.item()
            nb += 1
        print(f"epoch {epoch} mean_loss {tot / nb:.4f}")


if __name__ == "__main__":
    main()

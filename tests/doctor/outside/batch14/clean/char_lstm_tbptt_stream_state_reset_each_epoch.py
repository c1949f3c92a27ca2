"""Character LSTM language model trained with truncated BPTT over a contiguous text stream.

Unusual but correct: the corpus is cut into BATCH parallel streams (row b of every chunk
continues row b of the previous chunk), so carrying the LSTM state from one chunk to the next is
meaningful. The carried state is detached after each chunk (gradients stop at the chunk
boundary, the values flow on), and it is reset to zeros whenever a new epoch wraps back to the
start of the streams, where the continuity no longer holds. Evaluation on a held-out stream runs
under torch.no_grad() with its own freshly initialised state.

Source: https://github.com/karpathy/char-rnn/issues/78
"""

import random

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
random.seed(0)
torch.set_num_threads(2)

words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"]
text = " ".join(random.choice(words) for _ in range(4000))
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text])
V, BATCH, BPTT, H = len(chars), 16, 25, 64

split = int(0.9 * len(data))
train, val = data[:split], data[split:]
n_cols = len(train) // BATCH
streams = train[: n_cols * BATCH].view(BATCH, n_cols)  # (BATCH, n_cols): row = stream


class CharLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 32)
        self.lstm = nn.LSTM(32, H, batch_first=True)
        self.out = nn.Linear(H, V)

    def forward(self, x, state=None):
        h, state = self.lstm(self.emb(x), state)
        return self.out(h), state


model = CharLSTM()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
step = 0
for epoch in range(2):
    state = None  # new pass over the streams
    for i in range(0, n_cols - 1 - BPTT, BPTT):
        x = streams[:, i : i + BPTT]
        y = streams[:, i + 1 : i + 1 + BPTT]
        logits, state = model(x, state)
        state = tuple(s.detach() for s in state)
        loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 20 == 0:
            print(f"epoch {epoch} step {step:3d} loss {loss.item():.4f}")
        step += 1

model.eval()
with torch.no_grad():
    logits, _ = model(val[None, :-1])
    print(f"held-out loss {F.cross_entropy(logits[0], val[1:]).item():.4f}")

"""Character-level LSTM language model on a small synthetic text corpus.

Bug: the loss compares the logits at position t with the input token at the same position t,
instead of the next token t+1 (logits[:, :-1] vs tokens[:, 1:]). Because the LSTM output at t
has already read token t, the model only needs to learn the identity mapping: the training loss
races to ~0 in a few dozen steps, which looks like excellent progress, but the model has
learned nothing about predicting the next character and samples are garbage.

Source: https://github.com/huggingface/transformers/pull/404
"""

import random

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
random.seed(0)
torch.set_num_threads(2)

words = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "to", "park", "and", "slept"]
text = " ".join(random.choice(words) for _ in range(3000))
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text])
V, SEQ, E, H, BATCH = len(chars), 32, 32, 64, 32


def get_batch():
    starts = torch.randint(0, len(data) - SEQ - 1, (BATCH,))
    return torch.stack([data[s : s + SEQ + 1] for s in starts])


class CharLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, E)
        self.lstm = nn.LSTM(E, H, batch_first=True)
        self.out = nn.Linear(H, V)

    def forward(self, x):
        h, _ = self.lstm(self.emb(x))
        return self.out(h)


model = CharLM()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for step in range(150):
    tokens = get_batch()
    logits = model(tokens)
    loss = F.cross_entropy(logits.reshape(-1, V), tokens.reshape(-1))  # BUG-LINE
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 30 == 0:
        print(f"step {step:3d} loss {loss.item():.4f}")

with torch.no_grad():
    idx = torch.tensor([[stoi["t"]]])
    out = "t"
    for _ in range(40):
        nxt = model(idx)[0, -1].softmax(-1).multinomial(1)
        idx = torch.cat([idx, nxt[None]], dim=1)
        out += chars[nxt.item()]
print("sample:", out)

"""Word-level LSTM language model with tied input and output embeddings.

Unusual but correct: the softmax projection shares its weight matrix with the input embedding
(`self.decoder.weight = self.encoder.weight`), so the same nn.Parameter receives gradient from
both ends of the network and appears only once in model.parameters() (the optimizer updates it
once). The LSTM hidden size equals the embedding size so the shapes line up, the decoder keeps
its own bias, and a no-grad validation pass is run every few steps with eval()/train() toggled.

Source: https://github.com/pytorch/translate/pull/117
"""

import math
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
random.seed(0)
torch.set_num_threads(2)

grammar = {
    "S": [["NP", "VP"]],
    "NP": [["the", "N"], ["a", "N"], ["the", "ADJ", "N"]],
    "VP": [["V", "NP"], ["V"]],
    "N": [["cat"], ["dog"], ["bird"], ["child"]],
    "ADJ": [["small"], ["red"], ["lazy"]],
    "V": [["sees"], ["chases"], ["likes"], ["sleeps"]],
}


def expand(sym):
    if sym not in grammar:
        return [sym]
    return [w for part in random.choice(grammar[sym]) for w in expand(part)]


words = []
for _ in range(2500):
    words += expand("S") + ["."]
vocab = sorted(set(words))
stoi = {w: i for i, w in enumerate(vocab)}
ids = torch.tensor([stoi[w] for w in words])
split = int(0.9 * len(ids))
train_ids, val_ids = ids[:split], ids[split:]
V, D, SEQ, BATCH = len(vocab), 48, 20, 32


class TiedLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Embedding(V, D)
        self.lstm = nn.LSTM(D, D, batch_first=True)
        self.decoder = nn.Linear(D, V)
        self.decoder.weight = self.encoder.weight

    def forward(self, x):
        h, _ = self.lstm(self.encoder(x))
        return self.decoder(h)


def batch_from(src):
    starts = torch.randint(0, len(src) - SEQ - 1, (BATCH,))
    chunk = torch.stack([src[s : s + SEQ + 1] for s in starts])
    return chunk[:, :-1], chunk[:, 1:]


model = TiedLM()
assert model.decoder.weight is model.encoder.weight
print("unique parameter tensors:", len(list(model.parameters())))
opt = torch.optim.Adam(model.parameters(), lr=5e-3)

for step in range(150):
    x, y = batch_from(train_ids)
    loss = F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if step % 30 == 0 or step == 149:
        model.eval()
        with torch.no_grad():
            vx, vy = batch_from(val_ids)
            vloss = F.cross_entropy(model(vx).reshape(-1, V), vy.reshape(-1)).item()
        model.train()
        print(f"step {step:3d} train loss {loss.item():.4f} val ppl {math.exp(vloss):.2f}")

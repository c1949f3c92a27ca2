"""Train an LSTM sentiment-style classifier on synthetic right-padded token sequences of length
5..40 (label = whether the first token is a "positive" word). The sentence representation is taken
as output[:, -1], the LSTM output at the last padded position, instead of the output at each
sequence's true last token. For short sentences that vector has been fed dozens of PAD tokens after
the real words, so the evidence is washed out; the loss still falls on long sentences and nothing
errors.

Source: https://github.com/thtrieu/qclass_dl/issues/1
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
V, PAD, MAXLEN = 50, 0, 40


def make_batch(n):
    lengths = torch.randint(5, MAXLEN + 1, (n,))
    x = torch.full((n, MAXLEN), PAD)
    y = torch.randint(0, 2, (n,))
    for i in range(n):
        L = int(lengths[i])
        x[i, :L] = torch.randint(3, V, (L,))
        x[i, 0] = 1 if y[i] == 1 else 2
    return x, lengths, y


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 32, padding_idx=PAD)
        self.lstm = nn.LSTM(32, 64, batch_first=True)
        self.fc = nn.Linear(64, 2)

    def forward(self, x, lengths):
        out, _ = self.lstm(self.emb(x))
        last = out[:, -1]  # BUG-LINE
        return self.fc(last)


model = Classifier()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for step in range(80):
    x, lengths, y = make_batch(64)
    loss = F.cross_entropy(model(x, lengths), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
x, lengths, y = make_batch(512)
with torch.no_grad():
    acc = (model(x, lengths).argmax(1) == y).float().mean().item()
print("final loss", round(loss.item(), 4), "accuracy", round(acc, 3))

"""Bidirectional GRU sentence encoder whose final states feed a classifier head.

nn.GRU returns h_n with shape (num_layers * num_directions, batch, hidden) even when
batch_first=True. Bug: the two direction states are flattened with `h_n.view(batch, -1)`,
which reads the tensor in memory order: row i ends up holding the states of samples 2i and 2i+1
(forward direction for the first half of the batch, backward direction for the second half).
The shape is exactly what the head expects, so nothing fails, but each label is paired with
other sentences' encodings and the classifier cannot get past chance level. Fix:
`h_n.transpose(0, 1).reshape(batch, -1)` (or `torch.cat([h_n[0], h_n[1]], dim=-1)`).

Source: https://github.com/timbmg/Sentence-VAE/issues/15
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, SEQ, E, H, N_CLASSES, BATCH = 20, 10, 32, 32, 4, 32


def make_batch(n):
    x = torch.randint(0, VOCAB, (n, SEQ))
    y = x[:, 0] % N_CLASSES  # class is given by the first word
    return x, y


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, E)
        self.rnn = nn.GRU(E, H, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * H, N_CLASSES)

    def forward(self, x):
        _, h_n = self.rnn(self.emb(x))  # (2, B, H)
        sent = h_n.view(x.shape[0], -1)  # BUG-LINE
        return self.head(sent)


model = Encoder()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for step in range(150):
    x, y = make_batch(BATCH)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 30 == 0:
        print(f"step {step:3d} loss {loss.item():.4f}")

with torch.no_grad():
    x, y = make_batch(256)
    print(f"held-out accuracy {(model(x).argmax(-1) == y).float().mean().item():.3f}")

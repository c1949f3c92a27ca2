"""LSTM text classifier that reads the final hidden state h_n of a right-padded batch.

The label depends on the last real word of each sentence. Bug: the padded batch is fed to
nn.LSTM directly (no pack_padded_sequence / no length-based gather), so h_n is the state after
the LSTM has also consumed all trailing <pad> tokens. For short sentences that is many steps of
pad input after the informative token, and the classifier has to learn to carry the signal
through the padding. Training runs and the loss falls, but far more slowly and to a worse
value than a model whose h_n comes from the last non-pad token. Fix: pack the batch with the
true lengths (or gather the output at length-1).

Source: https://github.com/bentrevett/pytorch-sentiment-analysis/issues/86
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, VOCAB, MAXLEN, E, H, BATCH = 0, 20, 24, 32, 32, 32


def make_batch(n):
    lengths = torch.randint(2, MAXLEN + 1, (n,))
    x = torch.randint(1, VOCAB, (n, MAXLEN))
    pos = torch.arange(MAXLEN)[None, :]
    x = x.masked_fill(pos >= lengths[:, None], PAD)
    last = x[torch.arange(n), lengths - 1]
    y = (last >= VOCAB // 2).long()
    return x, lengths, y


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, E, padding_idx=PAD)
        self.lstm = nn.LSTM(E, H, batch_first=True)
        self.fc = nn.Linear(H, 2)

    def forward(self, x, lengths):
        emb = self.emb(x)
        _, (h_n, _) = self.lstm(emb)  # BUG-LINE
        return self.fc(h_n[-1])


model = Classifier()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)

for step in range(100):
    x, lengths, y = make_batch(BATCH)
    loss = F.cross_entropy(model(x, lengths), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step:3d} loss {loss.item():.4f}")

with torch.no_grad():
    x, lengths, y = make_batch(512)
    acc = (model(x, lengths).argmax(-1) == y).float().mean().item()
print(f"held-out accuracy {acc:.3f}")

"""Two-layer bidirectional LSTM classifier over right-padded batches, using packed sequences.

Unusual but correct: the batch is packed with its true lengths (enforce_sorted=False, lengths
on CPU), so h_n holds, for every sentence, the forward state after its last real token and the
backward state after its first token; the last layer's two directions are h_n[-2] and h_n[-1].
The packed outputs are also unpacked with total_length=MAXLEN and averaged with a hand-built
length mask (pad positions are zero and excluded from the denominator). The label depends on
both the first and the last real word, so both directions are needed.

Source: https://github.com/bentrevett/pytorch-sentiment-analysis/issues/5
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, VOCAB, MAXLEN, E, H, BATCH = 0, 16, 14, 24, 24, 32


def make_batch(n):
    lengths = torch.randint(2, MAXLEN + 1, (n,))
    x = torch.randint(1, VOCAB, (n, MAXLEN))
    x = x.masked_fill(torch.arange(MAXLEN)[None] >= lengths[:, None], PAD)
    first = x[:, 0]
    last = x[torch.arange(n), lengths - 1]
    y = 2 * (first >= VOCAB // 2).long() + (last >= VOCAB // 2).long()
    return x, lengths, y


class PackedBiLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, E, padding_idx=PAD)
        self.lstm = nn.LSTM(E, H, num_layers=2, bidirectional=True, batch_first=True, dropout=0.1)
        self.fc = nn.Linear(4 * H, 4)

    def forward(self, x, lengths):
        packed = pack_padded_sequence(self.emb(x), lengths.cpu(), batch_first=True, enforce_sorted=False)
        packed_out, (h_n, _) = self.lstm(packed)
        final = torch.cat([h_n[-2], h_n[-1]], dim=-1)  # last layer, fwd + bwd
        out, _ = pad_packed_sequence(packed_out, batch_first=True, total_length=MAXLEN)
        mask = (torch.arange(MAXLEN)[None] < lengths[:, None]).unsqueeze(-1).float()
        mean = (out * mask).sum(1) / mask.sum(1)
        return self.fc(torch.cat([final, mean], dim=-1))


model = PackedBiLSTM()
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
for step in range(90):
    x, lengths, y = make_batch(BATCH)
    loss = F.cross_entropy(model(x, lengths), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 30 == 0:
        print(f"step {step:3d} loss {loss.item():.4f}")

model.eval()
with torch.no_grad():
    x, lengths, y = make_batch(512)
    print(f"held-out accuracy {(model(x, lengths).argmax(-1) == y).float().mean().item():.3f}")

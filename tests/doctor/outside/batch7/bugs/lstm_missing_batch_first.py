"""The question encoder feeds tensors shaped (batch, seq_len, features) into an
nn.LSTM constructed without batch_first=True, so the LSTM treats the batch axis
as time and the time axis as batch. No error is raised because the shapes are
compatible; the recurrence mixes different examples of the batch together and the
"last hidden state" is the state after the last example, not the last token.

Source: https://github.com/Cadene/vqa.pytorch/issues/40
"""

import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.rnn = nn.LSTM(16, 32)  # BUG-LINE
        self.out = nn.Linear(32, 2)

    def forward(self, tokens):
        h, _ = self.rnn(self.emb(tokens))  # tokens: (batch, seq)
        return self.out(h[:, -1])


torch.manual_seed(0)
model = Encoder()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
tokens = torch.randint(0, 50, (24, 10))
labels = (tokens[:, -1] > 25).long()
for _step in range(6):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(tokens), labels)
    loss.backward()
    opt.step()
print("loss", loss.item())

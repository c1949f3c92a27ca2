"""LSTM language model on a synthetic token stream; the loss compares logits with the inputs themselves.

doctor-expect: labels_not_shifted
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
V, T = 50, 24
stream = torch.randint(0, V, (4000,))


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 32)
        self.lstm = nn.LSTM(32, 64, batch_first=True)
        self.head = nn.Linear(64, V)

    def forward(self, ids):
        h, _ = self.lstm(self.emb(ids))
        return self.head(h)


model = LM()
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
for _step in range(10):
    starts = torch.randint(0, len(stream) - T - 1, (16,))
    ids = torch.stack([stream[s : s + T] for s in starts])  # (B, T)
    logits = model(ids)  # (B, T, V)
    loss = F.cross_entropy(logits.reshape(-1, V), ids.reshape(-1))  # bug: targets should be ids shifted by one
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()

"""Clean: LSTM language model, next-token targets, gradient clipping, cosine schedule stepped per step."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
V, T = 40, 32
stream = torch.randint(0, V, (5000,))


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
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=20)
for _step in range(8):
    starts = torch.randint(0, len(stream) - T - 1, (16,))
    chunk = torch.stack([stream[s : s + T + 1] for s in starts])  # (B, T+1)
    x, y = chunk[:, :-1], chunk[:, 1:]
    loss = F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()

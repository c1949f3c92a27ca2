"""The positional encoding adds ``self.pe[:, x.shape[1], :]`` (an index) instead of ``self.pe[:, :x.shape[1], :]``
(a slice): every token receives the encoding of the one position ``seq_len``, so the model gets no order
information at all. The (1, D) row broadcasts over the sequence and nothing complains.

Source: https://github.com/DiffPoseTalk/DiffPoseTalk/issues/20
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
D = 32


class PositionalEncoding(nn.Module):
    def __init__(self, d, max_len=100):
        super().__init__()
        pos = torch.arange(max_len).unsqueeze(1).float()
        div = torch.exp(torch.arange(0, d, 2).float() * (-9.21 / d))
        pe = torch.zeros(1, max_len, d)
        pe[0, :, 0::2] = torch.sin(pos * div)
        pe[0, :, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[:, x.shape[1], :]  # BUG-LINE


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(3, D)
        self.pos = PositionalEncoding(D)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, 4, 64, 0.0, batch_first=True), 2)
        self.out = nn.Linear(D, 3)

    def forward(self, x):
        return self.out(self.enc(self.pos(self.inp(x))))


model = Regressor()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _step in range(6):
    x = torch.randn(8, 20, 3)
    y = torch.cumsum(x, dim=1) * 0.1
    loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()

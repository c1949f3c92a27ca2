"""The attention padding mask is derived from the embedded input (positions whose vector sums to zero are
padding), but it is computed after the positional encoding has been added. Padding vectors are then never zero,
the mask marks nothing, and every query attends to the padded keys.

Source: https://github.com/Kyubyong/transformer/issues/3
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
D = 32


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(40, D, padding_idx=0)
        self.pos = nn.Parameter(torch.randn(1, 16, D) * 0.1)
        self.layer = nn.TransformerEncoderLayer(D, 4, 64, 0.0, batch_first=True)
        self.fc = nn.Linear(D, 2)

    def forward(self, tok):
        x = self.emb(tok) + self.pos[:, : tok.size(1)]
        pad_mask = x.abs().sum(-1) == 0  # BUG-LINE
        h = self.layer(x, src_key_padding_mask=pad_mask)
        return self.fc(h[:, 0])


model = Encoder()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
tok = torch.randint(1, 40, (64, 16))
lengths = torch.randint(4, 17, (64,))
tok[torch.arange(16)[None] >= lengths[:, None]] = 0
y = (lengths > 10).long()
for i in range(0, 64, 16):
    loss = F.cross_entropy(model(tok[i : i + 16]), y[i : i + 16])
    opt.zero_grad()
    loss.backward()
    opt.step()

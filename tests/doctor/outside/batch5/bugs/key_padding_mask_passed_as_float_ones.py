"""The padding mask for ``nn.MultiheadAttention`` is built as a float tensor with 1.0 at padded keys. A float
key_padding_mask is *added* to the attention logits, so padded keys get +1 (more attention) instead of being
masked out; a boolean mask (or -inf) was intended. No error, the model attends to padding.

Source: https://github.com/pytorch/pytorch/issues/141018
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(40, 32, padding_idx=0)
        self.attn = nn.MultiheadAttention(32, 4, batch_first=True)
        self.fc = nn.Linear(32, 2)

    def forward(self, tok):
        x = self.emb(tok)
        pad = (tok == 0).float()  # BUG-LINE
        h, _ = self.attn(x, x, x, key_padding_mask=pad)
        keep = (tok != 0).unsqueeze(-1).float()
        return self.fc((h * keep).sum(1) / keep.sum(1))


model = Classifier()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
tok = torch.randint(1, 40, (64, 16))
lengths = torch.randint(4, 17, (64,))
tok[torch.arange(16)[None] >= lengths[:, None]] = 0
y = (tok == 5).any(1).long()
for i in range(0, 64, 16):
    loss = F.cross_entropy(model(tok[i : i + 16]), y[i : i + 16])
    opt.zero_grad()
    loss.backward()
    opt.step()

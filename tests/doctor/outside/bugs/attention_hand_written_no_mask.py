"""A single-head attention written by hand; the masked_fill with the causal mask was left out.

Source: https://lynx-cortex.pages.dev/phase-17-mini-gpt/break/00-break-forget-causal-mask/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
V, T, D = 24, 10, 16


class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.qkv = nn.Linear(D, 3 * D)
        self.out = nn.Linear(D, V)

    def forward(self, x):
        h = self.emb(x)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        att = q @ k.transpose(1, 2) / D**0.5
        att = att.softmax(dim=-1)  # BUG-LINE
        return self.out(att @ v)


model = Attn()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
data = torch.randint(0, V, (8, T + 1))
for _step in range(3):
    opt.zero_grad()
    logits = model(data[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, V), data[:, 1:].reshape(-1))
    loss.backward()
    opt.step()

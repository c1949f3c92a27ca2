"""A next-token conv LM that pads k-1 on the left: position t sees tokens up to t.

Source: https://lynx-cortex.pages.dev/phase-17-mini-gpt/break/00-break-forget-causal-mask/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
V, T = 24, 16


class ConvLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 16)
        self.conv = nn.Conv1d(16, 32, 3)
        self.out = nn.Linear(32, V)

    def forward(self, x):
        h = F.pad(self.emb(x).transpose(1, 2), (2, 0))
        return self.out(torch.relu(self.conv(h).transpose(1, 2)))


model = ConvLM()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
data = torch.randint(0, V, (8, T + 1))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(data[:, :-1]).reshape(-1, V), data[:, 1:].reshape(-1))
    loss.backward()
    opt.step()

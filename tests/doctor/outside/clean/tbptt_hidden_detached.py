"""The GRU's hidden state goes from chunk to chunk, detached at each boundary.

Source: https://thecodeforge.io/ml-ai/pytorch-basics/
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
rnn, head = nn.GRU(4, 16, batch_first=True), nn.Linear(16, 4)
opt = torch.optim.Adam([*rnn.parameters(), *head.parameters()], lr=1e-3)
stream = torch.randn(8, 40, 4)
h = torch.zeros(1, 8, 16)
for step in range(4):
    chunk = stream[:, step * 10 : (step + 1) * 10]
    opt.zero_grad()
    out, h = rnn(chunk, h.detach())
    loss = F.mse_loss(head(out[:, :-1]), chunk[:, 1:])
    loss.backward()
    opt.step()

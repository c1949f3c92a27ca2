"""Truncated backpropagation through time: a long sequence is processed in chunks of 10 steps, the LSTM state
is carried across chunks but detached at every chunk boundary, so each backward only covers the current chunk.
The detached state is deliberate.

Source: https://discuss.pytorch.org/t/implementing-truncated-backpropagation-through-time/15500
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
lstm = nn.LSTM(4, 32, batch_first=True)
head = nn.Linear(32, 4)
opt = torch.optim.Adam(list(lstm.parameters()) + list(head.parameters()), lr=3e-3)
seq = torch.randn(8, 60, 4)
target = torch.roll(seq, -1, dims=1)
state = None
for start in range(0, 60, 10):
    if state is not None:
        state = tuple(s.detach() for s in state)
    out, state = lstm(seq[:, start : start + 10], state)
    loss = F.mse_loss(head(out), target[:, start : start + 10])
    opt.zero_grad()
    loss.backward()
    opt.step()

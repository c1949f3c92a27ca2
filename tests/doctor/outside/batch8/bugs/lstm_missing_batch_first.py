"""Batch-major input fed to an nn.LSTM built without batch_first=True.

The data is shaped (batch, seq, feature) but the LSTM defaults to
(seq, batch, feature), so it treats the batch as time and the time steps as
independent samples.  Nothing crashes because the shapes still line up, but
the recurrence runs across different examples instead of along each sequence.
Source: https://github.com/ChiWeiHsiao/DeepVO-pytorch/issues/32
"""

import torch
import torch.nn as nn

torch.manual_seed(0)


class SeqRegressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(input_size=6, hidden_size=24)  # BUG-LINE
        self.head = nn.Linear(24, 1)

    def forward(self, x):  # x: (batch, seq, feature)
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


model = SeqRegressor()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(16, 10, 6)
y = x[:, :, 0].sum(1, keepdim=True)
for _step in range(8):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")

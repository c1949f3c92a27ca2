"""Train a DeepConvLSTM-style human-activity-recognition model on synthetic accelerometer windows
(batch, time, channels) whose class is given by when in the window a burst of motion occurs: a 1-D convolution front end followed by an LSTM and a classifier on the
last time step. The tensors are arranged batch-first, but the nn.LSTM is built with the default
batch_first=False, so the LSTM treats the batch as the time axis and the 50 time steps as 50
independent "sequences". The recurrence then runs across different windows of the mini-batch, and
"the last time step" is the last window in the batch. Shapes still line up, so no error is raised.

Source: https://github.com/mariusbock/dl-for-har/issues/11
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
T, C, K = 32, 3, 4


def make_batch(n):
    # the activity class is encoded by WHEN a burst of vigorous motion happens in the window
    y = torch.randint(0, K, (n,))
    t = torch.arange(T).float()
    start = (y * (T // K)).float()[:, None]
    burst = ((t[None] >= start) & (t[None] < start + T // K)).float()
    sig = torch.sin(t[None, :, None] * 0.9 + torch.rand(n, 1, C) * 6.28) * (0.2 + 1.5 * burst[:, :, None])
    return sig + 0.2 * torch.randn(n, T, C), y


class DeepConvLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(C, 32, 5, padding=2)
        self.lstm = nn.LSTM(32, 64)  # BUG-LINE
        self.fc = nn.Linear(64, K)

    def forward(self, x):
        h = F.relu(self.conv(x.transpose(1, 2))).transpose(1, 2)  # (B, T, 32)
        out, _ = self.lstm(h)
        return self.fc(out[:, -1])


model = DeepConvLSTM()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(150):
    x, y = make_batch(32)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
x, y = make_batch(32 * 8)
with torch.no_grad():
    acc = torch.cat([(model(xb).argmax(1) == yb) for xb, yb in zip(x.split(32), y.split(32))]).float().mean()
print("final loss", round(loss.item(), 4), "accuracy", round(acc.item(), 3))

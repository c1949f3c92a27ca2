"""Causal TCN forecaster: every dilated convolution is padded on the LEFT only.

Unusual but correct: padding is applied with F.pad(x, ((k-1)*d, 0)) (one-sided)
instead of Conv1d's symmetric `padding=`, so output t depends only on inputs
<= t and the sequence length is kept. Targets are the inputs shifted one step
into the future (y[t] = x[t+1]); the loss ignores the first receptive-field
positions that only see zero padding. A check at the end perturbs future inputs
and confirms earlier outputs do not change. Left-only padding as the causal
alternative to symmetric padding is discussed in this forum thread.

Source: https://discuss.pytorch.org/t/padding-in-causal-convs-only-for-seq2seq-prediction/158115
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


class CausalConv(nn.Module):
    def __init__(self, cin, cout, k, d):
        super().__init__()
        self.left = (k - 1) * d
        self.conv = nn.Conv1d(cin, cout, k, dilation=d)

    def forward(self, x):
        return self.conv(F.pad(x, (self.left, 0)))


class TCN(nn.Module):
    def __init__(self, ch=16, k=3):
        super().__init__()
        self.l1 = CausalConv(1, ch, k, 1)
        self.l2 = CausalConv(ch, ch, k, 2)
        self.l3 = CausalConv(ch, ch, k, 4)
        self.head = nn.Conv1d(ch, 1, 1)
        self.receptive = 1 + (k - 1) * (1 + 2 + 4)

    def forward(self, x):
        h = F.relu(self.l1(x))
        h = F.relu(self.l2(h)) + h
        h = F.relu(self.l3(h)) + h
        return self.head(h)


def make_batch(bs=16, L=40):
    t = torch.rand(bs, 1) * 50 + torch.arange(L + 1).float()
    s = torch.sin(0.3 * t) + 0.5 * torch.sin(0.11 * t) + 0.1 * torch.randn(bs, L + 1)
    return s[:, :-1].unsqueeze(1), s[:, 1:].unsqueeze(1)


model = TCN()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for step in range(80):
    x, y = make_batch()
    pred = model(x)
    r = model.receptive
    loss = F.mse_loss(pred[..., r:], y[..., r:])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0 or step == 79:
        print(f"step {step:3d} mse {loss.item():.4f}")

with torch.no_grad():
    x, _ = make_batch(2)
    x2 = x.clone()
    x2[..., 25:] += 5.0
    same = torch.allclose(model(x)[..., :25], model(x2)[..., :25])
    print("outputs before t=25 unaffected by future inputs:", same)

"""Temporal convolutional network that predicts the next value at every position of a window.

Unusual on purpose: the loss is taken at every time step of the window (dense next-step targets
shifted by one), which is only valid because every convolution is causal: inputs are left-padded
with F.pad by (kernel_size - 1) * dilation before a Conv1d with padding=0, in both convolutions of
each residual block, so output t never sees input t+1. Dilations double per block. Weight
normalisation is applied through torch.nn.utils.parametrizations.weight_norm. At the start the
program verifies causality numerically by perturbing the last input step and checking that all
earlier outputs are unchanged. Modelled on the darts TCN causality issue, which discusses
x = F.pad(x, ((k-1)*d, 0)) followed by the convolution.

Source: https://github.com/unit8co/darts/issues/480
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.parametrizations import weight_norm

torch.manual_seed(0)
torch.set_num_threads(2)


class CausalBlock(nn.Module):
    def __init__(self, c_in, c_out, k, dilation):
        super().__init__()
        self.pad = (k - 1) * dilation
        self.conv1 = weight_norm(nn.Conv1d(c_in, c_out, k, dilation=dilation))
        self.conv2 = weight_norm(nn.Conv1d(c_out, c_out, k, dilation=dilation))
        self.skip = nn.Conv1d(c_in, c_out, 1) if c_in != c_out else nn.Identity()
        self.drop = nn.Dropout(0.05)

    def forward(self, x):
        h = self.drop(F.relu(self.conv1(F.pad(x, (self.pad, 0)))))
        h = self.drop(F.relu(self.conv2(F.pad(h, (self.pad, 0)))))
        return F.relu(h + self.skip(x))


class TCN(nn.Module):
    def __init__(self, ch=16, k=3, levels=3):
        super().__init__()
        blocks = [CausalBlock(1 if i == 0 else ch, ch, k, 2**i) for i in range(levels)]
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Conv1d(ch, 1, 1)

    def forward(self, x):  # (B, 1, T) -> (B, 1, T)
        return self.head(self.blocks(x))


def make_series(T=5000):
    t = torch.arange(T, dtype=torch.float32)
    return torch.sin(2 * math.pi * t / 30) * (1 + 0.5 * torch.sin(2 * math.pi * t / 400)) + 0.05 * torch.randn(T)


def main():
    model = TCN()
    model.eval()
    with torch.no_grad():
        a = torch.randn(1, 1, 64)
        b = a.clone()
        b[..., -1] += 10.0
        assert torch.allclose(model(a)[..., :-1], model(b)[..., :-1]), "non-causal"
    print("causality check passed")
    model.train()
    s = make_series()
    n_train, W = 4000, 48
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    for step in range(100):
        idx = torch.randint(0, n_train - W - 1, (16,))
        seg = torch.stack([s[i : i + W + 1] for i in idx.tolist()]).unsqueeze(1)
        x, y = seg[..., :-1], seg[..., 1:]
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0 or step == 99:
            model.eval()
            with torch.no_grad():
                seg = s[n_train : n_train + 401].view(1, 1, -1)
                val = F.mse_loss(model(seg[..., :-1]), seg[..., 1:]).item()
            model.train()
            print(f"step {step:3d} loss {loss.item():.4f} val_mse {val:.4f}")


if __name__ == "__main__":
    main()

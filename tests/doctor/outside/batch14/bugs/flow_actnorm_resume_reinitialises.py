"""Tiny normalizing-flow density model with data-dependent ActNorm, trained, checkpointed and resumed.

ActNorm keeps its "already initialised" flag as a plain Python attribute
(self.initialized = False) instead of a registered buffer. The flag is not part
of state_dict(), so after the checkpoint is loaded into a fresh model the
flag is False again and the first forward pass on the resumed model
re-initialises the learned scale and shift from the current batch,
overwriting the trained values that were just loaded. The resumed run's NLL
jumps back up; no error or warning appears.

Source: https://github.com/bayesiains/nflows/issues/4
"""

import io
import math

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

D = 4


class ActNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.log_scale = nn.Parameter(torch.zeros(d))
        self.shift = nn.Parameter(torch.zeros(d))
        self.initialized = False  # BUG-LINE

    def forward(self, x):
        if self.training and not self.initialized:
            with torch.no_grad():
                std = x.std(0) + 1e-6
                self.log_scale.data = -torch.log(std)
                self.shift.data = -x.mean(0) / std
            self.initialized = True
        y = x * torch.exp(self.log_scale) + self.shift
        return y, self.log_scale.sum().expand(x.shape[0])


class Coupling(nn.Module):
    def __init__(self, d, flip):
        super().__init__()
        self.flip = flip
        self.net = nn.Sequential(nn.Linear(d // 2, 32), nn.Tanh(), nn.Linear(32, d))

    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        if self.flip:
            a, b = b, a
        s, t = self.net(a).chunk(2, dim=1)
        s = torch.tanh(s)
        b = b * torch.exp(s) + t
        out = torch.cat([b, a] if self.flip else [a, b], dim=1)
        return out, s.sum(1)


class Flow(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList()
        for k in range(4):
            self.layers.append(ActNorm(D))
            self.layers.append(Coupling(D, flip=bool(k % 2)))

    def nll(self, x):
        logdet = torch.zeros(x.shape[0])
        for layer in self.layers:
            x, ld = layer(x)
            logdet = logdet + ld
        logp = -0.5 * (x**2).sum(1) - 0.5 * D * math.log(2 * math.pi)
        return -(logp + logdet).mean()


def sample_data(n):
    z = torch.randn(n, D)
    x = torch.stack([z[:, 0] * 3 + 10, z[:, 1] + 0.5 * z[:, 0] ** 2, z[:, 2] * 0.2 - 4, z[:, 3] + z[:, 2]], 1)
    return x


data = sample_data(5000)


def train(model, opt, steps, tag):
    for step in range(steps):
        idx = torch.randint(0, data.shape[0], (128,))
        loss = model.nll(data[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0 or step == steps - 1:
            with torch.no_grad():
                full = model.nll(data[:1000]).item()
            print(f"{tag} step {step:3d} batch_nll {loss.item():.4f} nll {full:.4f}")


model = Flow()
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
model.train()
train(model, opt, 150, "run1")

buf = io.BytesIO()
torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buf)
buf.seek(0)
ckpt = torch.load(buf)

resumed = Flow()
resumed.load_state_dict(ckpt["model"])
opt2 = torch.optim.Adam(resumed.parameters(), lr=2e-3)
opt2.load_state_dict(ckpt["opt"])
resumed.train()
train(resumed, opt2, 60, "resumed")

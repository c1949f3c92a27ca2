"""A synthesizer model embeds pitch and loudness with separate input MLPs, created as
``nn.ModuleList([mlp(1, H, 3)] * 2)``. List multiplication puts the same MLP object in both slots, so pitch and
loudness are encoded with one shared set of weights instead of two.

Source: https://github.com/acids-ircam/ddsp_pytorch/issues/37
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
H = 32


def mlp(i, h, n):
    layers = [nn.Linear(i, h), nn.LayerNorm(h), nn.LeakyReLU()]
    for _ in range(n - 1):
        layers += [nn.Linear(h, h), nn.LayerNorm(h), nn.LeakyReLU()]
    return nn.Sequential(*layers)


class Synth(nn.Module):
    def __init__(self):
        super().__init__()
        self.in_mlps = nn.ModuleList([mlp(1, H, 3)] * 2)  # BUG-LINE
        self.gru = nn.GRU(2 * H, H, batch_first=True)
        self.out = nn.Linear(H, 8)

    def forward(self, pitch, loudness):
        h = torch.cat([self.in_mlps[0](pitch), self.in_mlps[1](loudness)], -1)
        return self.out(self.gru(h)[0])


model = Synth()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _step in range(5):
    pitch, loud = torch.rand(8, 20, 1), torch.rand(8, 20, 1)
    target = torch.cat([torch.sin(pitch * 6).repeat(1, 1, 4), loud.repeat(1, 1, 4)], -1)
    loss = F.mse_loss(model(pitch, loud), target)
    opt.zero_grad()
    loss.backward()
    opt.step()

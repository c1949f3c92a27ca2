"""BYOL self-supervised pretraining of a small conv encoder on synthetic images.

Unusual but correct: the target network is a frozen copy of the online
encoder+projector that receives no gradients; it is updated only by an exponential
moving average written straight into its .data under torch.no_grad(), and the EMA
momentum follows a cosine schedule from 0.99 up to 1.0 over training (the BYOL
schedule whose omission the report fixes). Target outputs are used as stop-gradient
regression targets for the online predictor, with a symmetrised loss. Only the
online network is passed to the optimizer.

Source: https://github.com/conradry/pixpro-with-weights/issues/2
"""

import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

STEPS, BATCH, BASE_TAU = 120, 64, 0.99


def mlp(i, h, o):
    return nn.Sequential(nn.Linear(i, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Linear(h, o))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 16, 3, 1, 1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, 2, 1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )

    def forward(self, x):
        return self.net(x)


class OnlineNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.projector = mlp(32, 64, 32)

    def forward(self, x):
        return self.projector(self.encoder(x))


def augment(x):
    b = x.size(0)
    flip = torch.rand(b) < 0.5
    x = torch.where(flip[:, None, None, None], x.flip(-1), x)
    shift = torch.randint(-2, 3, (2,)).tolist()
    x = torch.roll(x, shifts=shift, dims=(2, 3))
    x = x * (0.8 + 0.4 * torch.rand(b, 1, 1, 1)) + 0.1 * torch.randn_like(x)
    return x


def regression_loss(p, z):
    return 2 - 2 * F.cosine_similarity(p, z.detach(), dim=-1).mean()


def main():
    protos = torch.randn(10, 3, 16, 16)
    data = protos[torch.randint(0, 10, (2048,))] + 0.5 * torch.randn(2048, 3, 16, 16)

    online = OnlineNet()
    predictor = mlp(32, 64, 32)
    target = copy.deepcopy(online)
    for p in target.parameters():
        p.requires_grad_(False)

    opt = torch.optim.Adam(list(online.parameters()) + list(predictor.parameters()), lr=1e-3)
    for step in range(STEPS):
        x = data[torch.randint(0, len(data), (BATCH,))]
        v1, v2 = augment(x), augment(x)
        p1, p2 = predictor(online(v1)), predictor(online(v2))
        with torch.no_grad():
            z1, z2 = target(v1), target(v2)
        loss = regression_loss(p1, z2) + regression_loss(p2, z1)
        opt.zero_grad()
        loss.backward()
        opt.step()

        tau = 1 - (1 - BASE_TAU) * (math.cos(math.pi * step / STEPS) + 1) / 2
        with torch.no_grad():
            for po, pt in zip(online.parameters(), target.parameters()):
                pt.data.mul_(tau).add_(po.data, alpha=1 - tau)
            for bo, bt in zip(online.buffers(), target.buffers()):
                bt.data.copy_(bo.data)
        if step % 20 == 0 or step == STEPS - 1:
            print(f"step {step:3d} loss {loss.item():.4f} tau {tau:.4f}")


if __name__ == "__main__":
    main()

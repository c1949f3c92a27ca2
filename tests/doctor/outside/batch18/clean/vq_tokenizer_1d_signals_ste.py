"""VQ-VAE tokenizer for 1-D signals (mixtures of sinusoids) with a straight-through
estimator.

Unusual but correct: the codebook lookup is non-differentiable, so the decoder input
is z_e + (z_q - z_e).detach() - the forward value is the code vector while the
backward pass copies the decoder gradient straight to the encoder. The codebook term
(z_q - sg[z_e])^2 moves codes toward encoder outputs and the commitment term
beta * (sg[z_q] - z_e)^2 pulls the encoder toward its codes, with the stop-gradients
on the correct sides (the ordering the report corrects). Dead codes are re-seeded from
encoder outputs every 50 steps by writing into the codebook .data on purpose.

Source: https://github.com/karpathy/deep-vector-quantization/issues/2
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

LEN, CODES, DIM, BETA = 64, 24, 8, 0.25


def make_signals(n):
    t = torch.linspace(0, 1, LEN)
    f1 = torch.randint(1, 6, (n, 1)).float()
    f2 = torch.randint(6, 12, (n, 1)).float()
    ph = torch.rand(n, 1) * 2 * math.pi
    return (torch.sin(2 * math.pi * f1 * t + ph) + 0.5 * torch.sin(2 * math.pi * f2 * t))[:, None]


class VectorQuantizer(nn.Module):
    def __init__(self):
        super().__init__()
        self.codebook = nn.Embedding(CODES, DIM)
        nn.init.uniform_(self.codebook.weight, -1.0 / CODES, 1.0 / CODES)

    def forward(self, z_e):
        z = z_e.permute(0, 2, 1)
        flat = z.reshape(-1, DIM)
        idx = torch.cdist(flat, self.codebook.weight).argmin(1)
        z_q = self.codebook(idx).view_as(z)
        codebook_loss = (z_q - z.detach()).pow(2).mean()
        commit_loss = (z_q.detach() - z).pow(2).mean()
        z_st = z + (z_q - z).detach()
        return z_st.permute(0, 2, 1), codebook_loss + BETA * commit_loss, idx, flat


class Tokenizer(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(
            nn.Conv1d(1, 16, 4, 2, 1), nn.ReLU(), nn.Conv1d(16, 16, 4, 2, 1), nn.ReLU(), nn.Conv1d(16, DIM, 1)
        )
        self.vq = VectorQuantizer()
        self.dec = nn.Sequential(nn.ConvTranspose1d(DIM, 16, 4, 2, 1), nn.ReLU(), nn.ConvTranspose1d(16, 1, 4, 2, 1))

    def forward(self, x):
        z_st, vq_loss, idx, flat = self.vq(self.enc(x))
        return self.dec(z_st), vq_loss, idx, flat


def main():
    data = make_signals(4096)
    model = Tokenizer()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    usage = torch.zeros(CODES)
    for step in range(200):
        x = data[torch.randint(0, len(data), (48,))]
        x_hat, vq_loss, idx, flat = model(x)
        rec = F.mse_loss(x_hat, x)
        loss = rec + vq_loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        usage += torch.bincount(idx, minlength=CODES).float()
        if step % 50 == 49:
            dead = (usage == 0).nonzero().flatten()
            if len(dead) > 0:
                with torch.no_grad():
                    pick = flat[torch.randint(0, flat.size(0), (len(dead),))].detach()
                    model.vq.codebook.weight.data[dead] = pick
            used = int((usage > 0).sum())
            usage.zero_()
            print(
                f"step {step:3d} loss {loss.item():.4f} rec {rec.item():.4f} vq {vq_loss.item():.4f} codes_used {used}/{CODES}"
            )


if __name__ == "__main__":
    main()

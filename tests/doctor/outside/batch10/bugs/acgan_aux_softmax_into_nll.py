"""Auxiliary-classifier GAN on synthetic 2-D class-conditional data (4 Gaussian blobs). The discriminator has a
real/fake head and an auxiliary class head; the auxiliary loss is nn.NLLLoss, which expects log-probabilities,
but the class head ends in nn.Softmax, so NLLLoss receives probabilities and computes -p[y] instead of
-log p[y]. The auxiliary loss becomes negative and its gradient vanishes for confident wrong predictions, so
both players get a badly scaled class signal. NLLLoss does not validate its input range, so there is no error
or warning.
Source: https://github.com/clvrai/ACGAN-PyTorch/pull/4
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
K, ZD = 4, 8
centers = torch.tensor([[math.cos(2 * math.pi * k / K), math.sin(2 * math.pi * k / K)] for k in range(K)]) * 2.0


def real_batch(n):
    y = torch.randint(0, K, (n,))
    return centers[y] + 0.15 * torch.randn(n, 2), y


class G(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(K, 8)
        self.net = nn.Sequential(nn.Linear(ZD + 8, 64), nn.ReLU(), nn.Linear(64, 2))

    def forward(self, z, y):
        return self.net(torch.cat([z, self.emb(y)], 1))


class D(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, 64), nn.LeakyReLU(0.2))
        self.adv = nn.Linear(64, 1)
        self.aux = nn.Sequential(nn.Linear(64, K), nn.Softmax(dim=1))  # BUG-LINE

    def forward(self, x):
        h = self.body(x)
        return self.adv(h).squeeze(1), self.aux(h)


g, d = G(), D()
opt_g = torch.optim.Adam(g.parameters(), lr=2e-3, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(d.parameters(), lr=2e-3, betas=(0.5, 0.999))
aux_crit = nn.NLLLoss()
for step in range(300):
    x, y = real_batch(64)
    z = torch.randn(64, ZD)
    yf = torch.randint(0, K, (64,))
    fake = g(z, yf)
    adv_r, cls_r = d(x)
    adv_f, cls_f = d(fake.detach())
    d_loss = (
        F.binary_cross_entropy_with_logits(adv_r, torch.ones(64))
        + F.binary_cross_entropy_with_logits(adv_f, torch.zeros(64))
        + aux_crit(cls_r, y)
        + aux_crit(cls_f, yf)
    )
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    adv_g, cls_g = d(fake)
    g_loss = F.binary_cross_entropy_with_logits(adv_g, torch.ones(64)) + aux_crit(cls_g, yf)
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    if step % 100 == 0:
        print(f"step {step} d_loss {d_loss.item():.4f} g_loss {g_loss.item():.4f}")
with torch.no_grad():
    yt = torch.arange(K).repeat_interleave(200)
    samples = g(torch.randn(len(yt), ZD), yt)
    err = (samples - centers[yt]).norm(dim=1).mean().item()
print("mean distance of conditional samples to their class centre:", round(err, 4))

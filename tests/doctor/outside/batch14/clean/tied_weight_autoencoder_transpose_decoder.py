"""Tabular denoising autoencoder whose decoder reuses the encoder weight matrices (tied weights).

Unusual but correct: the decoder has no weight matrices of its own; it
applies F.linear with the transposes of the encoder's weights, and only has
separate decoder biases. The shared matrices are single nn.Parameters, so
model.parameters() yields each once, the optimizer updates each once, and the
gradient is the sum of the encoder-side and decoder-side contributions. The
parameter count printed confirms no duplication.

Source: https://github.com/OpenNMT/OpenNMT-py/pull/309
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


class TiedAE(nn.Module):
    def __init__(self, d_in=30, h1=64, h2=8):
        super().__init__()
        self.enc1 = nn.Linear(d_in, h1)
        self.enc2 = nn.Linear(h1, h2)
        self.dec_b1 = nn.Parameter(torch.zeros(h1))
        self.dec_b2 = nn.Parameter(torch.zeros(d_in))

    def forward(self, x):
        z = torch.tanh(self.enc2(torch.tanh(self.enc1(x))))
        h = torch.tanh(F.linear(z, self.enc2.weight.t(), self.dec_b1))
        return F.linear(h, self.enc1.weight.t(), self.dec_b2)


latent = torch.randn(5000, 6)
mix = torch.randn(6, 30)
data = torch.tanh(latent @ mix) + 0.05 * torch.randn(5000, 30)
train, val = data[:4500], data[4500:]

model = TiedAE()
n_unique = sum(p.numel() for p in model.parameters())
print(f"parameters: {n_unique}")
opt = torch.optim.Adam(model.parameters(), lr=3e-3)

for step in range(300):
    idx = torch.randint(0, 4500, (128,))
    clean = train[idx]
    noisy = clean + 0.2 * torch.randn_like(clean)
    loss = F.mse_loss(model(noisy), clean)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0 or step == 299:
        with torch.no_grad():
            v = F.mse_loss(model(val), val).item()
        print(f"step {step:3d} train {loss.item():.4f} val {v:.4f}")

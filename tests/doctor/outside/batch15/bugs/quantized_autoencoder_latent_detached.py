"""Autoencoder with an integer-quantized latent code where the quantizer stops the
gradient instead of passing it straight through.

Source: https://github.com/Justin-Tan/generative-compression/issues/27

The report: the quantizer was implemented with stop_gradient around the rounded
latent, which removes the whole encoder from backpropagation, so the encoder never
updates; a straight-through estimator (identity gradient for the rounding) was what
was intended. The PyTorch equivalent below detaches the rounded code. Training runs,
the decoder learns to do the best it can with the random, fixed encoder features, and
the reconstruction loss plateaus well above what a trained encoder reaches.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

D, LATENT = 32, 6
basis = torch.randn(LATENT, D)
data = torch.randn(2048, LATENT) @ basis + 0.05 * torch.randn(2048, D)

encoder = nn.Sequential(nn.Linear(D, 64), nn.ReLU(), nn.Linear(64, LATENT))
decoder = nn.Sequential(nn.Linear(LATENT, 64), nn.ReLU(), nn.Linear(64, D))
opt = torch.optim.Adam(list(encoder.parameters()) + list(decoder.parameters()), lr=2e-3)
LEVELS = 8.0

for epoch in range(1, 16):
    for idx in torch.randperm(2048).split(128):
        x = data[idx]
        z = encoder(x)
        z_q = torch.round(z * LEVELS).detach() / LEVELS  # BUG-LINE
        loss = F.mse_loss(decoder(z_q), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if epoch % 3 == 0:
        print(f"epoch {epoch} recon mse {loss.item():.4f}")

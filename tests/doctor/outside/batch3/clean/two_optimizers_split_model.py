"""One model, two optimizers over disjoint parts (SGD with momentum for the encoder, Adam for the decoder), both
zeroed and stepped every iteration after one backward. Correct, if unusual.

Source: https://github.com/wiseodd/controlled-text-generation/issues/15
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(16, 8), nn.Tanh())
decoder = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16))
opt_enc = torch.optim.SGD(encoder.parameters(), lr=0.05, momentum=0.9)
opt_dec = torch.optim.Adam(decoder.parameters(), lr=1e-3)
X = torch.randn(256, 16)
for i in range(0, 256, 32):
    xb = X[i : i + 32]
    loss = F.mse_loss(decoder(encoder(xb)), xb)
    opt_enc.zero_grad()
    opt_dec.zero_grad()
    loss.backward()
    opt_enc.step()
    opt_dec.step()

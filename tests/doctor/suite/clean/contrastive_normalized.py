"""Clean: InfoNCE with L2-normalised embeddings and temperature 0.1, symmetric loss."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
data = torch.randn(1024, 32)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data), batch_size=64, shuffle=True)
encoder = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 64))
opt = torch.optim.Adam(encoder.parameters(), lr=1e-3)
for (xb,) in loader:
    z1 = F.normalize(encoder(xb + 0.1 * torch.randn_like(xb)), dim=1)
    z2 = F.normalize(encoder(xb + 0.1 * torch.randn_like(xb)), dim=1)
    logits = z1 @ z2.T / 0.1
    labels = torch.arange(len(xb))
    loss = (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels)) / 2
    opt.zero_grad()
    loss.backward()
    opt.step()

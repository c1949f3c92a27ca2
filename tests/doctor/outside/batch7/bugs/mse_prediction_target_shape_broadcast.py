"""The network predicts a (batch, 1) tensor while the initial-condition targets
are a flat (batch,) tensor. nn.MSELoss broadcasts the pair to (batch, batch) and
compares every prediction with every target, only warning once. The loss is then
minimised by predicting the batch mean for every input, so the network cannot
fit the individual targets.

Source: https://github.com/Photon-AI-Research/NeuralSolvers/issues/20
"""

import warnings

import torch
from torch import nn

warnings.filterwarnings("ignore")
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.MSELoss()
x = torch.rand(64, 3)
u0 = torch.sin(3 * x[:, 0]) * x[:, 1]
for _step in range(8):
    opt.zero_grad()
    pred = model(x)
    loss = criterion(pred, u0)  # BUG-LINE
    loss.backward()
    opt.step()
print("loss", loss.item())

"""The optimizer is assembled from per-module parameter groups appended to a list; the group for the CRF
transitions and the final classifier is built but, unlike the others, never appended. Those parameters keep
their initial values for the whole run while the encoder trains.

Source: https://github.com/zjunlp/HVPNeT/issues/5
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.GRU(16, 32, batch_first=True)
        self.fc = nn.Linear(32, 5)
        self.transitions = nn.Parameter(torch.zeros(5, 5))

    def forward(self, x):
        h, _ = self.encoder(x)
        emissions = self.fc(h)
        prev = torch.cat([torch.zeros_like(emissions[:, :1]), emissions[:, :-1]], 1).softmax(-1)
        return emissions + prev @ self.transitions


model = Tagger()
parameters = []
params = {"lr": 1e-3, "params": list(model.encoder.parameters())}
parameters.append(params)
params = {"lr": 5e-3, "params": [*list(model.fc.parameters()), model.transitions]}  # BUG-LINE
opt = torch.optim.AdamW(parameters)
for _step in range(5):
    x, y = torch.randn(8, 12, 16), torch.randint(0, 5, (8, 12))
    loss = F.cross_entropy(model(x).reshape(-1, 5), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()

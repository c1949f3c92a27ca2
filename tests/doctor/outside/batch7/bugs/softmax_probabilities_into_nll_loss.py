"""The text classifier ends with F.softmax and its output goes into nn.NLLLoss,
which expects log-probabilities. NLLLoss just takes minus the selected entry, so
the "loss" is minus a probability, always negative and bounded in [-1, 0]: its
gradient vanishes as soon as predictions become confident-wrong and the model
optimises the wrong objective.

Source: https://github.com/AnubhavGupta3377/Text-Classification-Models-Pytorch/issues/9
"""

import torch
from torch import nn
from torch.nn import functional as F


class TextClf(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(60, 16)
        self.fc = nn.Linear(16, 4)

    def forward(self, tokens):
        return F.softmax(self.fc(self.emb(tokens)), dim=-1)  # BUG-LINE


torch.manual_seed(0)
model = TextClf()
criterion = nn.NLLLoss()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
tokens = torch.randint(0, 60, (64, 12))
labels = tokens[:, 0] % 4
for _step in range(6):
    opt.zero_grad()
    loss = criterion(model(tokens), labels)
    loss.backward()
    opt.step()
print("loss", loss.item())

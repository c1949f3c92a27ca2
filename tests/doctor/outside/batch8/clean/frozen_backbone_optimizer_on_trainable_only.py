"""Deliberately frozen encoder with the optimizer built only from trainable parameters.

The embedding/encoder is frozen with requires_grad_(False) and put in eval
mode, and the optimizer receives filter(lambda p: p.requires_grad, ...), so
only the classifier head is updated.  Parameters that never change are
expected here.
Source: https://github.com/xinyi-code/Chinese-Text-Classification/issues/1
"""

import torch
import torch.nn as nn

torch.manual_seed(0)


class TextClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Embedding(50, 32), nn.Flatten(), nn.Linear(32 * 10, 64), nn.ReLU())
        self.head = nn.Linear(64, 3)

    def forward(self, x):
        return self.head(self.encoder(x))


model = TextClassifier()
model.encoder.requires_grad_(False)
model.encoder.eval()
opt = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=1e-2)
tokens, labels = torch.randint(0, 50, (64, 10)), torch.randint(0, 3, (64,))

for _step in range(8):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(tokens), labels)
    loss.backward()
    opt.step()
n_train = sum(p.numel() for p in model.parameters() if p.requires_grad)
print(f"loss {loss.item():.4f} trainable params {n_train}")

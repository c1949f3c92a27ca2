"""nn.Embedding.from_pretrained freezes by default; the user meant to fine-tune it and passes it to the optimizer.

Source: https://github.com/huggingface/peft/issues/349
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
vectors = torch.randn(50, 8)


class Clf(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding.from_pretrained(vectors)  # BUG-LINE
        self.fc = nn.Linear(8, 2)

    def forward(self, ids):
        return self.fc(self.emb(ids).mean(1))


model = Clf()
opt = torch.optim.Adam([{"params": model.emb.parameters(), "lr": 1e-3}, {"params": model.fc.parameters()}], lr=1e-2)
ids, y = torch.randint(0, 50, (16, 6)), torch.randint(0, 2, (16,))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(ids), y)
    loss.backward()
    opt.step()

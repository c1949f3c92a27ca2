"""from_pretrained(freeze=True) kept frozen on purpose; the optimizer holds only the classifier.

Source: https://github.com/huggingface/peft/issues/349
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
emb = nn.Embedding.from_pretrained(torch.randn(40, 8))
fc = nn.Linear(8, 2)
opt = torch.optim.Adam(fc.parameters(), lr=1e-2)
ids, y = torch.randint(0, 40, (16, 5)), torch.randint(0, 2, (16,))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(fc(emb(ids).mean(1)), y)
    loss.backward()
    opt.step()

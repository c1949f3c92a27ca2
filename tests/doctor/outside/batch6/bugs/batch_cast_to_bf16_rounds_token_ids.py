"""The training step casts every tensor of the batch to the training dtype (bfloat16) before the forward pass,
including the integer token ids, and converts them back with ``.long()`` for the embedding. bfloat16 has an
8-bit mantissa, so every id above 256 is rounded to a neighbouring id: the model silently trains on the wrong
tokens and targets.

Source: https://github.com/Nerogar/OneTrainer/issues/1177
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
vocab = 2000
model = nn.Sequential(nn.Embedding(vocab, 32), nn.Linear(32, vocab))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
tokens = torch.randint(0, vocab, (64, 17))
for i in range(0, 64, 8):
    batch = {"input_ids": tokens[i : i + 8, :-1], "labels": tokens[i : i + 8, 1:]}
    batch = {k: v.to(torch.bfloat16) for k, v in batch.items()}  # BUG-LINE
    logits = model(batch["input_ids"].long())
    loss = F.cross_entropy(logits.reshape(-1, vocab), batch["labels"].long().reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()

"""Padded batch fed to a BERT classifier without its attention_mask.

The tokenised batch is right-padded with [PAD], but only input_ids are passed
to the model, so every real token attends to the padding positions and the
[CLS] representation depends on how much padding a sequence received.  The
loss still goes down, masking the problem.
Source: https://github.com/jingyaogong/minimind-v/issues/76
"""

import torch
from transformers import BertConfig, BertForSequenceClassification

torch.manual_seed(0)
config = BertConfig(
    vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, num_labels=2
)
model = BertForSequenceClassification(config)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

input_ids = torch.randint(5, 100, (8, 20))
lengths = torch.randint(4, 20, (8,))
attention_mask = (torch.arange(20)[None, :] < lengths[:, None]).long()
input_ids = input_ids * attention_mask  # pad id 0
labels = (lengths > 10).long()

model.train()
for _step in range(6):
    out = model(input_ids=input_ids, labels=labels)  # BUG-LINE
    opt.zero_grad()
    out.loss.backward()
    opt.step()
print(f"loss {out.loss.item():.4f}")

"""A BERT sequence classifier is trained on padded batches with only ``input_ids`` passed: without the
``attention_mask`` every real token attends to the padding, so a sentence's prediction depends on how much
padding its batch needed. Training runs and the loss falls; predictions change with the batch.

Source: https://github.com/oliverguhr/german-sentiment/issues/11
"""

import torch
from transformers import BertConfig, BertForSequenceClassification

torch.manual_seed(0)
PAD = 0
cfg = BertConfig(
    vocab_size=80, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
    max_position_embeddings=32, num_labels=2, pad_token_id=PAD,
)  # fmt: skip
model = BertForSequenceClassification(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
g = torch.Generator().manual_seed(0)
lengths = torch.randint(3, 24, (96,), generator=g)
ids = torch.randint(1, 80, (96, 24), generator=g)
attention_mask = (torch.arange(24)[None, :] < lengths[:, None]).long()
ids = ids * attention_mask  # right padding with the pad id
labels = (ids[:, 0] % 2).long()
model.train()
for i in range(0, 96, 16):
    out = model(input_ids=ids[i : i + 16], labels=labels[i : i + 16])  # BUG-LINE
    opt.zero_grad()
    out.loss.backward()
    opt.step()

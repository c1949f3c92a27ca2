"""When building NLI batches the attention masks are initialised with ones for
every position, including the [PAD] positions added to reach the batch length.
BERT therefore attends to padding tokens: the representation of each sentence
pair depends on how much padding it got, and the classifier learns from
corrupted features.

Source: https://github.com/yg211/bert_nli/pull/3
"""

import torch
from transformers import BertConfig, BertForSequenceClassification

torch.manual_seed(0)
cfg = BertConfig(
    vocab_size=100,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=64,
    num_labels=3,
)
model = BertForSequenceClassification(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
PAD = 0
lengths = torch.randint(4, 16, (8,))
input_ids = torch.full((8, 16), PAD)
for i, n in enumerate(lengths):
    input_ids[i, :n] = torch.randint(5, 100, (int(n),))
attention_mask = torch.ones_like(input_ids)  # BUG-LINE
labels = torch.randint(0, 3, (8,))
model.train()
for _step in range(4):
    opt.zero_grad()
    out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    out.loss.backward()
    opt.step()
print("loss", out.loss.item())

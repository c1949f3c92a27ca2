"""BERT classifier after adding new tokens: embeddings resized and new rows mean-initialised.

Unusual: the vocabulary grows after model creation; resize_token_embeddings is called and the
new embedding rows are set to the mean of the old ones, then training uses the new token ids.
Source: https://github.com/huggingface/transformers/issues/7879
"""

import torch
from transformers import BertConfig, BertForSequenceClassification

torch.manual_seed(0)
old_vocab, n_new = 60, 3
model = BertForSequenceClassification(
    BertConfig(
        vocab_size=old_vocab,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=2,
    )
)
model.resize_token_embeddings(old_vocab + n_new)
with torch.no_grad():
    w = model.get_input_embeddings().weight
    w[old_vocab:] = w[:old_vocab].mean(0, keepdim=True)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for _step in range(8):
    ids = torch.randint(0, old_vocab, (8, 12))
    ids[:, 0] = old_vocab
    ids[:4, 5] = old_vocab + 1
    y = (ids[:, 5] == old_vocab + 1).long()
    out = model(input_ids=ids, labels=y)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
print(f"loss {out.loss.item():.4f}")

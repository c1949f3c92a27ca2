"""Fine-tunes a tiny BERT sequence classifier (built from a config) with a hand-written loop on a
synthetic sentiment task over right-padded token sequences: the label says whether "positive"
tokens outnumber "negative" ones. The attention mask is built with the nn.Transformer
key_padding_mask convention (True/1 = padding), but Hugging Face models expect the opposite
(1 = attend, 0 = ignore). Every query therefore attends only to the [PAD] positions and the real
tokens are masked out; the [CLS] vector only sees padding and its own embedding through the
residual path. Nothing errors, the loss is finite, the classifier just cannot get past chance.

Source: https://github.com/nyu-mll/jiant/pull/465
"""

import torch
from transformers import BertConfig, BertForSequenceClassification

torch.manual_seed(0)
PAD, CLS = 0, 1
POS = list(range(2, 8))
NEG = list(range(8, 14))
V, T, B = 20, 16, 32
cfg = BertConfig(
    vocab_size=V,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=128,
    max_position_embeddings=T,
    pad_token_id=PAD,
    num_labels=2,
)
model = BertForSequenceClassification(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)


def batch(n):
    ids = torch.full((n, T), PAD)
    labels = torch.zeros(n, dtype=torch.long)
    for i in range(n):
        length = int(torch.randint(4, T - 2, ()))
        toks = torch.randint(2, 14, (length,))
        ids[i, 0] = CLS
        ids[i, 1 : 1 + length] = toks
        labels[i] = int((toks < 8).sum() > (toks >= 8).sum())
    return ids, labels


model.train()
for step in range(35):
    ids, labels = batch(B)
    attention_mask = (ids == PAD).long()  # BUG-LINE
    out = model(input_ids=ids, attention_mask=attention_mask, labels=labels)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step} loss {out.loss.item():.4f}")

model.eval()
with torch.no_grad():
    ids, labels = batch(256)
    logits = model(input_ids=ids, attention_mask=(ids == PAD).long()).logits
    acc = (logits.argmax(-1) == labels).float().mean().item()
print(f"final loss {out.loss.item():.4f}  accuracy {acc:.3f}")

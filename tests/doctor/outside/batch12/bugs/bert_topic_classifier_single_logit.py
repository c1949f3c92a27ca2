"""Trains a tiny BERT sequence classifier (built from a config) with a hand-written loop on a synthetic
4-topic text classification task (each topic has its own keywords). The head is created with
num_labels=1, which transformers interprets as a regression problem: the model outputs one scalar and
the loss becomes MSE between that scalar and the integer topic id, treating nominal topics as if they
were ordered numbers. No error or warning is raised (integer labels are accepted by the regression
branch) and the MSE goes down, but the classifier is fitting the wrong objective from the first step.

Source: https://github.com/huggingface/transformers/issues/1706
"""

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

torch.manual_seed(0)
topics = [[f"k{t}_{j}" for j in range(5)] for t in range(4)]
filler = [f"f{i}" for i in range(20)]
vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]"] + filler + sum(topics, []))}
core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
core.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(
    tokenizer_object=core, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]"
)


def example():
    y = int(torch.randint(0, 4, (1,)))
    ws = [filler[i] for i in torch.randint(0, 20, (8,)).tolist()]
    for _ in range(2):
        ws.insert(int(torch.randint(0, len(ws), (1,))), topics[y][int(torch.randint(0, 5, (1,)))])
    return "[CLS] " + " ".join(ws) + " [SEP]", y


data = [example() for _ in range(320)]
enc = tok([d[0] for d in data], padding=True, return_tensors="pt")
labels = torch.tensor([d[1] for d in data])

cfg = BertConfig(
    vocab_size=len(vocab),
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=128,
    max_position_embeddings=32,
    pad_token_id=0,
    num_labels=1,
)  # BUG-LINE
model = BertForSequenceClassification(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

model.train()
for step in range(30):
    idx = torch.randint(0, 256, (32,))
    out = model(input_ids=enc["input_ids"][idx], attention_mask=enc["attention_mask"][idx], labels=labels[idx])
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step} loss {out.loss.item():.4f}")

model.eval()
with torch.no_grad():
    logits = model(input_ids=enc["input_ids"][256:], attention_mask=enc["attention_mask"][256:]).logits
    pred = logits.argmax(-1) if logits.shape[-1] > 1 else logits.squeeze(-1).round().clamp(0, 3).long()
    print("held-out accuracy:", (pred == labels[256:]).float().mean().item())

"""Trains a tiny T5 (built from a config) on a synthetic "spell the number" translation task with
a locally built word-level tokenizer and a hand-written loop. Only `labels` are passed: T5 builds
its decoder inputs by shifting the labels right and inserting decoder_start_token_id, so the
program never constructs decoder_input_ids itself. Target padding is replaced by -100 so it does
not count in the loss, while the encoder padding is handled by the attention mask. Unusual-looking
(decoder inputs never appear, pad id equals the decoder start id) but correct.

Source: https://github.com/patil-suraj/exploring-T5/issues/2
"""

import random

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

random.seed(0)
torch.manual_seed(0)
names = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2}
for w in [str(d) for d in range(10)] + names:
    vocab[w] = len(vocab)
tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
tk.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")

cfg = T5Config(
    vocab_size=len(vocab),
    d_model=64,
    d_kv=16,
    d_ff=128,
    num_layers=2,
    num_decoder_layers=2,
    num_heads=4,
    pad_token_id=0,
    eos_token_id=1,
    decoder_start_token_id=0,
    dropout_rate=0.0,
)
model = T5ForConditionalGeneration(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)


def batch(n):
    src, tgt = [], []
    for _ in range(n):
        digits = [random.randrange(10) for _ in range(random.randint(2, 5))]
        src.append(" ".join(str(d) for d in digits) + " </s>")
        tgt.append(" ".join(names[d] for d in digits) + " </s>")
    enc = tok(src, padding=True, return_tensors="pt")
    lab = tok(tgt, padding=True, return_tensors="pt")["input_ids"]
    lab = lab.masked_fill(lab == tok.pad_token_id, -100)
    return enc, lab


model.train()
for step in range(25):
    enc, labels = batch(24)
    out = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], labels=labels)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step} loss {out.loss.item():.4f}")
print(f"final loss {out.loss.item():.4f}")

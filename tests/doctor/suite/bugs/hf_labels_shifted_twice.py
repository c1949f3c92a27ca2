"""A tiny GPT-2 (built from a config, word-level tokenizer trained here) trained on next-token pairs made by hand
(inputs ids[:, :-1], labels ids[:, 1:]) and passed as ``labels=``: the model shifts labels again, so each
position is trained to predict the token two ahead.

doctor-expect: labels_shifted_twice
"""

import random

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

random.seed(0)
torch.manual_seed(0)
WORDS = [
    "the",
    "a",
    "cat",
    "dog",
    "bird",
    "sat",
    "ran",
    "flew",
    "on",
    "under",
    "over",
    "mat",
    "log",
    "tree",
    "quickly",
    "slowly",
    "today",
]
texts = [" ".join(random.choices(WORDS, k=random.randint(4, 14))) for _ in range(256)]

raw = Tokenizer(models.WordLevel(unk_token="[UNK]"))
raw.pre_tokenizer = pre_tokenizers.Whitespace()
raw.train_from_iterator(texts, trainers.WordLevelTrainer(special_tokens=["[PAD]", "[EOS]", "[UNK]"]))
raw.post_processor = processors.TemplateProcessing(single="$A [EOS]", special_tokens=[("[EOS]", 1)])
tok = PreTrainedTokenizerFast(tokenizer_object=raw, pad_token="[PAD]", eos_token="[EOS]", unk_token="[UNK]")

config = GPT2Config(
    vocab_size=len(tok), n_positions=32, n_embd=32, n_layer=2, n_head=2,
    bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
)  # fmt: skip
model = GPT2LMHeadModel(config)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for start in range(0, len(texts), 16):
    batch = tok(texts[start : start + 16], padding=True, return_tensors="pt")
    ids, mask = batch["input_ids"], batch["attention_mask"]
    labels = ids[:, 1:].masked_fill(mask[:, 1:] == 0, -100)  # bug: shifted here, and again inside the model
    loss = model(input_ids=ids[:, :-1], attention_mask=mask[:, :-1], labels=labels).loss
    opt.zero_grad()
    loss.backward()
    opt.step()

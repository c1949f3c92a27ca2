"""Clean: supervised fine-tune of a tiny GPT-2 (built from a config, word-level tokenizer trained here) on
question/answer pairs with ``pad_token = eos_token``, the labels masked right: the prompt and the padding
(attention_mask == 0) are -100, the answer and its end token are trained.
"""

import random

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

random.seed(0)
torch.manual_seed(0)
NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
pairs = []
for _ in range(256):
    a, b = random.randrange(5), random.randrange(5)
    pairs.append((f"what is {NUMBERS[a]} plus {NUMBERS[b]} ?", f"it is {NUMBERS[a + b]} ."))

raw = Tokenizer(models.WordLevel(unk_token="[UNK]"))
raw.pre_tokenizer = pre_tokenizers.Whitespace()
corpus = [q + " " + a for q, a in pairs]
raw.train_from_iterator(corpus, trainers.WordLevelTrainer(special_tokens=["[EOS]", "[UNK]"]))
raw.post_processor = processors.TemplateProcessing(single="$A [EOS]", special_tokens=[("[EOS]", 0)])
tok = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="[EOS]", unk_token="[UNK]")
tok.pad_token = tok.eos_token

config = GPT2Config(
    vocab_size=len(tok), n_positions=32, n_embd=32, n_layer=2, n_head=2,
    bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
)  # fmt: skip
model = GPT2LMHeadModel(config)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for start in range(0, len(pairs), 16):
    chunk = pairs[start : start + 16]
    batch = tok([q + " " + a for q, a in chunk], padding=True, return_tensors="pt")
    labels = batch["input_ids"].clone()
    for row, (q, _a) in enumerate(chunk):
        labels[row, : len(tok(q, add_special_tokens=False)["input_ids"])] = -100  # the prompt is not trained
    labels[batch["attention_mask"] == 0] = -100  # padding by the mask, not by id: the real end token stays trained
    loss = model(**batch, labels=labels).loss
    opt.zero_grad()
    loss.backward()
    opt.step()

"""Fine-tunes a tiny GPT-2 (built from a config) with a hand-written loop on short synthetic sentences
of different lengths. GPT-2 has no pad token, so the pad token is set to the EOS token and batches are
right-padded; the labels are a plain copy of input_ids. The padded positions therefore stay in the loss
(they are never replaced by -100), so a large share of every batch's loss and gradient comes from
learning to predict EOS after EOS on padding. No error or warning is raised: the attention mask hides
the padding from attention, but not from the loss, and the loss looks fine (it is even pulled down by
the easy padding targets).

Source: https://github.com/huggingface/transformers/issues/7135
"""

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

torch.manual_seed(0)
words = [f"t{i}" for i in range(30)]
vocab = {t: i for i, t in enumerate(["[UNK]", "<|endoftext|>"] + words)}
core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
core.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]", eos_token="<|endoftext|>")
tok.pad_token = tok.eos_token
tok.padding_side = "right"


def sentence():
    n = int(torch.randint(3, 16, (1,)))
    start = int(torch.randint(0, 30, (1,)))
    return " ".join(words[(start + 2 * k) % 30] for k in range(n)) + " <|endoftext|>"


texts = [sentence() for _ in range(256)]
cfg = GPT2Config(
    vocab_size=len(vocab),
    n_embd=64,
    n_layer=2,
    n_head=4,
    n_positions=32,
    bos_token_id=1,
    eos_token_id=1,
    pad_token_id=1,
)
model = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)

model.train()
for step in range(30):
    batch = [texts[i] for i in torch.randint(0, len(texts), (16,)).tolist()]
    enc = tok(batch, padding=True, return_tensors="pt")
    labels = enc["input_ids"].clone()  # BUG-LINE
    out = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], labels=labels)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step} loss {out.loss.item():.4f}")

model.eval()
with torch.no_grad():
    enc = tok(texts[:64], padding=True, return_tensors="pt")
    logits = model(**enc).logits[:, :-1]
    tgt = enc["input_ids"][:, 1:]
    real = enc["attention_mask"][:, 1:].bool()
    acc = (logits.argmax(-1) == tgt)[real].float().mean().item()
    print("next-token accuracy on real tokens:", round(acc, 4))

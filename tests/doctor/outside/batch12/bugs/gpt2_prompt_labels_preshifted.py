"""Fine-tunes a tiny GPT-2 (built from a config) with a hand-written loop on a synthetic "copy the
sequence in reverse" language-modelling task. The labels are shifted left by one position in the data
pipeline before being handed to GPT2LMHeadModel, which shifts labels internally as well, so each
position is trained to predict the token two steps ahead instead of the next one. Nothing errors: the
shapes still match (the last label is padded with -100) and the loss decreases, it just optimises the
wrong (next-next-token) objective from the first step.

Source: https://github.com/huggingface/transformers/pull/37830
"""

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

torch.manual_seed(0)
words = [f"w{i}" for i in range(20)]
vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[BOS]", "[EOS]", "[SEP]"] + words)}
core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
core.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(
    tokenizer_object=core, unk_token="[UNK]", pad_token="[PAD]", bos_token="[BOS]", eos_token="[EOS]"
)


def make_text():
    seq = [words[i] for i in torch.randint(0, 20, (5,)).tolist()]
    return " ".join(["[BOS]"] + seq + ["[SEP]"] + seq[::-1] + ["[EOS]"])


texts = [make_text() for _ in range(256)]
enc = tok(texts, return_tensors="pt")
input_ids = enc["input_ids"]

cfg = GPT2Config(
    vocab_size=len(vocab),
    n_embd=64,
    n_layer=2,
    n_head=4,
    n_positions=32,
    bos_token_id=2,
    eos_token_id=3,
    pad_token_id=0,
)
model = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)


def make_labels(ids):
    lab = torch.full_like(ids, -100)
    lab[:, :-1] = ids[:, 1:]  # BUG-LINE
    return lab


model.train()
for step in range(25):
    idx = torch.randint(0, len(texts), (32,))
    ids = input_ids[idx]
    out = model(input_ids=ids, labels=make_labels(ids))
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step} loss {out.loss.item():.4f}")

model.eval()
with torch.no_grad():
    ids = input_ids[:64]
    logits = model(input_ids=ids).logits
    pred = logits[:, 6:-1].argmax(-1)  # predictions after [SEP]
    tgt = ids[:, 7:]
    print("next-token accuracy on reversed half:", (pred == tgt).float().mean().item())

"""Inputs are padded on the left by the tokenizer, but the loss mask is padded on the right.

The tokenizer has padding_side="left" while the per-sample label masks are stacked with
pad_sequence (right padding). For every shorter sequence the mask no longer lines up with the
tokens: the loss is computed on padding/prompt tokens and part of the answer is ignored.
Source: https://github.com/LAION-AI/Open-Assistant/issues/3657
"""

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from torch.nn.utils.rnn import pad_sequence
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

words = ["<pad>", "<eos>", "<unk>", "q:", "a:"] + [f"w{i}" for i in range(40)]
tk = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")
tok.padding_side = "left"

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=len(words), n_positions=64))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

for step in range(8):
    feats, masks = [], []
    for b in range(4):
        q_len, a_len = 2 + (b + step) % 4, 3
        q = " ".join(f"w{(b * 3 + i) % 40}" for i in range(q_len))
        a = " ".join(f"w{(b * 5 + i) % 40}" for i in range(a_len))
        ids = tok(f"q: {q} a: {a} <eos>")["input_ids"]
        feats.append({"input_ids": ids})
        masks.append(torch.tensor([0] * (q_len + 2) + [1] * (a_len + 1), dtype=torch.bool))
    batch = tok.pad(feats, return_tensors="pt")
    label_mask = pad_sequence(masks, batch_first=True, padding_value=False)  # BUG-LINE
    labels = batch["input_ids"].masked_fill(~label_mask, -100)
    out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=labels)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
print(f"sft loss {out.loss.item():.4f}")

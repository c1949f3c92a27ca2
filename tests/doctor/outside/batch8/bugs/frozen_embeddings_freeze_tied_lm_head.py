"""Freezing the GPT-2 body also freezes the LM head because the weights are tied.

The intent is to train only the language-model head.  With the default
tie_word_embeddings=True, lm_head.weight IS transformer.wte.weight, so freezing
the transformer sets requires_grad=False on the head too; the optimizer built
over lm_head + ln_f only ever updates ln_f and the head never trains.
Source: https://github.com/huggingface/transformers/issues/11903
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=64, bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(config)
for name, p in model.transformer.named_parameters():  # BUG-LINE
    p.requires_grad = name.startswith("ln_f")
trainable = list(model.lm_head.parameters()) + list(model.transformer.ln_f.parameters())
opt = torch.optim.AdamW(trainable, lr=1e-3)
head_before = model.lm_head.weight.detach().clone()

ids = torch.randint(0, 100, (8, 16))
model.train()
for _step in range(5):
    out = model(input_ids=ids, labels=ids)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
moved = (model.lm_head.weight - head_before).abs().max().item()
print(f"loss {out.loss.item():.4f} lm_head change {moved:.2e}")

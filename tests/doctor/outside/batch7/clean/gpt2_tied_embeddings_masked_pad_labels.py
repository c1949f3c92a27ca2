"""Causal-LM training of a tiny GPT-2 with tied input/output embeddings
(tie_word_embeddings=True, so lm_head.weight is the same tensor as wte.weight)
and labels = input_ids with padded positions set to -100. The model shifts the
labels internally, so passing unshifted labels is correct, and the shared weight
is counted once by the optimizer.

Source: https://huggingface.co/docs/transformers/model_doc/gpt2
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
cfg = GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=2, tie_word_embeddings=True)
model = GPT2LMHeadModel(cfg)
assert model.lm_head.weight is model.transformer.wte.weight
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
PAD = 0
ids = torch.full((8, 16), PAD)
mask = torch.zeros_like(ids)
for i in range(8):
    n = 8 + i
    ids[i, :n] = (torch.arange(n) + i) % 60 + 1
    mask[i, :n] = 1
labels = ids.masked_fill(mask == 0, -100)
model.train()
for _step in range(5):
    opt.zero_grad()
    loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
    loss.backward()
    opt.step()
print("loss", loss.item())

"""New special tokens are added and ``resize_token_embeddings`` is called *after* the optimizer was created.
Resizing replaces the embedding weight with a new Parameter, so the optimizer keeps updating the old,
detached matrix while the model's real (tied) token embeddings get gradients that are never applied.

Source: https://github.com/huggingface/transformers/pull/3532
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel
from transformers.utils import logging

logging.set_verbosity_error()
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=64))
model.train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
model.resize_token_embeddings(104)  # BUG-LINE
data = torch.randint(0, 104, (32, 16))
for i in range(0, 32, 8):
    batch = data[i : i + 8]
    out = model(input_ids=batch, labels=batch)
    opt.zero_grad()
    out.loss.backward()
    opt.step()

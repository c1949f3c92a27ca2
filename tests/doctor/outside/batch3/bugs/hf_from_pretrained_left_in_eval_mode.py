"""A plain training loop fine-tunes a causal LM loaded with ``from_pretrained``, which returns the model in
``eval()`` mode; the loop never calls ``model.train()`` (the HF Trainer would), so every step trains with
dropout off. The loss falls faster than it should and the model overfits; nothing warns.

Source: https://github.com/huggingface/transformers/pull/24463
"""

import tempfile

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
checkpoint = tempfile.mkdtemp()  # a "pretrained" checkpoint saved by an earlier run
cfg = GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=1, n_head=2, bos_token_id=0, eos_token_id=0)
GPT2LMHeadModel(cfg).save_pretrained(checkpoint)

model = GPT2LMHeadModel.from_pretrained(checkpoint)  # BUG-LINE
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4)
batches = torch.randint(0, 64, (8, 8, 12))
for ids in batches:
    loss = model(input_ids=ids, labels=ids).loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

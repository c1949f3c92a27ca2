"""The dataset code shifts the LM labels by one position before passing them to
GPT2LMHeadModel, but the model already shifts labels internally. Logits at
position t are therefore scored against token t+2: the model is trained on
next-next-token prediction instead of next-token prediction.

Source: https://github.com/huggingface/transformers/pull/562
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
cfg = GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=2)
model = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
base = torch.arange(16) % 8 + 1
input_ids = torch.stack([torch.roll(base, k) for k in range(8)])
labels = torch.full_like(input_ids, -100)
labels[:, :-1] = input_ids[:, 1:]  # BUG-LINE
model.train()
for _step in range(5):
    opt.zero_grad()
    loss = model(input_ids=input_ids, labels=labels).loss
    loss.backward()
    opt.step()
print("loss", loss.item())

"""Labels shifted by one in the data pipeline and shifted again inside the model.

GPT2LMHeadModel already shifts `labels` internally (logits[:, :-1] vs
labels[:, 1:]).  Pre-shifting the labels in the dataset makes the model learn
to predict the token two positions ahead, not the next token.  The loss
decreases, so nothing looks broken.
Source: https://github.com/InternLM/InternLM/issues/318
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=64, bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(config)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

data = torch.randint(0, 100, (16, 17))
input_ids = data[:, :-1]
labels = data[:, 1:]  # BUG-LINE

model.train()
for _step in range(6):
    out = model(input_ids=input_ids, labels=labels)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
print(f"loss {out.loss.item():.4f}")

"""The dataset already shifts labels by one token and GPT2LMHeadModel shifts them again internally.

input_ids = sample[:-1] and labels = sample[1:], but the HF causal-LM loss also compares
logits[:, :-1] with labels[:, 1:]. The model is therefore trained to predict the token two
positions ahead, from the first step on.
Source: https://github.com/wdndev/tiny-llm-zh/issues/10
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
cfg = GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=50, n_positions=32)
model = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

for _step in range(8):
    start = torch.randint(0, 40, (8, 1))
    sample = (start + torch.arange(17)) % 50
    input_ids = sample[:, :-1]
    labels = sample[:, 1:]  # BUG-LINE
    out = model(input_ids=input_ids, labels=labels)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
print(f"lm loss {out.loss.item():.4f}")
